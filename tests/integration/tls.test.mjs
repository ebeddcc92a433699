// `llmhost serve --ssl-cert --ssl-key` with a self-signed certificate made by
// the `openssl` command at test time: the official `openai` client (through a
// fetch that trusts the certificate) chats with and without streaming and
// hangs up mid-stream; /health, /metrics and `llmhost ls` work over HTTPS;
// plain HTTP to the port gets a 400; a silent client is dropped at
// --header-timeout; the dashboard's session cookie is Secure; bad certificate
// or key files stop the server at start with an error naming the file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, fixtures, binary, waitFor, http, fetchTrusting } from './harness.mjs';

const KEY = 'sk-it-tls';
const MODEL = 'qwen3-tiny';
const dir = mkdtempSync(path.join(tmpdir(), 'llmhost-tls-'));
const certFile = path.join(dir, 'cert.pem');
const keyFile = path.join(dir, 'key.pem');
let server;
let tlsFetch;
let client;

function openssl(args) {
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.error || r.stderr}`);
}

before(async () => {
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout', keyFile, '-out', certFile]);
  server = await startServer(['--model-dir', fixtures, '--api-key', KEY, '--ssl-cert', certFile,
    '--ssl-key', keyFile, '--header-timeout', '2']);
  tlsFetch = fetchTrusting(readFileSync(certFile));
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0, fetch: tlsFetch });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
});

const messages = [{ role: 'user', content: 'What is 2+2?' }];
const auth = { authorization: `Bearer ${KEY}` };

test('the server announces an https:// URL', () => {
  assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
});

test('/health and /metrics over HTTPS', async () => {
  const health = await http(`${server.url}/health`, 'GET', undefined, {}, tlsFetch);
  assert.equal(health.status, 200);
  assert.equal(health.json.status, 'ok');
  const metrics = await http(`${server.url}/metrics`, 'GET', undefined, auth, tlsFetch);
  assert.equal(metrics.status, 200);
  assert.match(metrics.text, /^llmhost_/m);
});

test('the openai client chats over HTTPS, streaming and not', async () => {
  const params = { model: MODEL, messages, max_tokens: 12, temperature: 0 };
  const r = await client.chat.completions.create(params);
  assert.equal(r.object, 'chat.completion');
  assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 12);
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let text = '';
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.ok(chunks > 1, 'streamed in pieces');
  assert.equal(text, r.choices[0].message.content);
});

test('a client that hangs up mid-stream over TLS: the engine frees its blocks', async () => {
  const status = async () => {
    const r = await http(`${server.url}/api/status`, 'GET', undefined, auth, tlsFetch);
    return (r.json.models || []).find((m) => m.id === MODEL);
  };
  const before = await status();
  const controller = new AbortController();
  const stream = await client.chat.completions.create(
    { model: MODEL, messages, max_tokens: 3000, temperature: 0, ignore_eos: true, stream: true },
    { signal: controller.signal });
  let chunks = 0;
  try {
    for await (const _ of stream) {
      if (++chunks === 3) {
        controller.abort();
        break;
      }
    }
  } catch {
    // an abort error, depending on the SDK version
  }
  assert.equal(chunks, 3);
  const st = await waitFor(async () => {
    const s = await status();
    return s.running === 0 && s.waiting === 0 && s.kv.blocks_used === 0 ? s : null;
  }, 'the engine to release the hung-up request');
  assert.equal(st.aborted, (before?.aborted ?? 0) + 1);
});

test("llmhost's own client reaches it with the certificate trusted (SSL_CERT_FILE)", () => {
  const r = spawnSync(binary, ['ls', '--url', server.url, '--api-key', KEY],
    { encoding: 'utf8', timeout: 30000, env: { ...process.env, SSL_CERT_FILE: certFile } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^${MODEL} `, 'm'));
});

test('plain HTTP to the TLS port gets a 400 and the connection closes', async () => {
  const plainUrl = server.url.replace('https://', 'http://');
  const r = await http(`${plainUrl}/health`);
  assert.equal(r.status, 400);
  assert.equal(r.headers.get('connection'), 'close');
  assert.match(r.text, /this port speaks HTTPS only/);
});

test('a client that opens a connection and sends nothing is dropped at --header-timeout', async () => {
  const started = Date.now();
  await new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', reject);
    socket.on('close', resolve);
    socket.resume();
  });
  const waited = Date.now() - started;
  assert.ok(waited >= 1500 && waited < 10000, `closed after ${waited} ms`);
});

test('the dashboard sign-in cookie is Secure over HTTPS', async () => {
  const r = await http(`${server.url}/admin/login`, 'POST', { key: KEY }, {}, tlsFetch);
  assert.equal(r.status, 200, r.text);
  const cookie = r.headers.getSetCookie().find((c) => c.startsWith('llmhost_session='));
  assert.ok(cookie, 'a session cookie');
  for (const attribute of ['Secure', 'HttpOnly', 'SameSite=Strict']) {
    assert.ok(cookie.split('; ').includes(attribute), `${attribute} in ${cookie}`);
  }
  const session = await http(`${server.url}/admin/api/session`, 'GET', undefined,
    { cookie: cookie.split(';')[0] }, tlsFetch);
  assert.equal(session.json.signed_in, true);
});

// Exits at once (before any model loads) with the code of every bad setting.
function serveFails(args) {
  const home = mkdtempSync(path.join(tmpdir(), 'llmhost-tls-home-'));
  const r = spawnSync(binary, ['serve', '--home', home, '--port', '0', '--model-dir', fixtures, ...args],
    { encoding: 'utf8', timeout: 30000 });
  assert.equal(r.status, 1, `exit code 1, got ${r.status} (${r.signal}): ${r.stderr}`);
  return r.stderr;
}

test('bad certificate or key files stop the server at start, naming the file', () => {
  const missing = path.join(dir, 'missing.pem');
  assert.match(serveFails(['--ssl-cert', missing, '--ssl-key', keyFile]),
    new RegExp(`--ssl-cert: ${missing}: no such file`));
  assert.match(serveFails(['--ssl-cert', certFile, '--ssl-key', missing]),
    new RegExp(`--ssl-key: ${missing}: no such file`));
  assert.match(serveFails(['--ssl-cert', keyFile, '--ssl-key', keyFile]),
    new RegExp(`--ssl-cert ${keyFile}: no PEM certificate in it`));
  const otherKey = path.join(dir, 'other.pem');
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', otherKey]);
  assert.match(serveFails(['--ssl-cert', certFile, '--ssl-key', otherKey]),
    new RegExp(`--ssl-key ${otherKey}: the key does not match the certificate in --ssl-cert ${certFile}`));
  assert.match(serveFails(['--ssl-cert', certFile]), /--ssl-cert needs --ssl-key too/);
  assert.match(serveFails(['--ssl-key', keyFile]), /--ssl-key needs --ssl-cert too/);
});
