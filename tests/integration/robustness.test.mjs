// Defects a reliability probe found, against a real `llmhost serve`: HTTP/1.0
// streams that never closed, a settings PUT nested 100,000 deep (a crash) or
// 3,000 deep (a file that bricked the next start), HEAD on GET routes, DNS
// rebinding (a foreign Host), requests the APIs reject (tool schemas,
// Anthropic max_tokens), a client trickling its headers, and a model folder
// that links to itself.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, symlinkSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, fixtures, http, waitFor } from './harness.mjs';

const MODEL = 'qwen3-tiny';
const hasCurl = spawnSync('curl', ['--version']).status === 0;
let server;
let modelsDir;

function serverArgs() {
  return ['--model-dir', modelsDir, '--header-timeout', '1'];
}

before(async () => {
  modelsDir = mkdtempSync(path.join(tmpdir(), 'llmhost-models-'));
  symlinkSync(path.join(fixtures, MODEL), path.join(modelsDir, MODEL));
  symlinkSync(modelsDir, path.join(modelsDir, 'selfloop'));  // a folder that links to itself
  server = await startServer(serverArgs());
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
});

test('a folder linking to itself lists its models once', async () => {
  const r = await http(`${server.url}/v1/models`);
  assert.deepEqual(r.json.data.map((m) => m.id), [MODEL]);
});

test('curl --http1.0 -N: every stream closes after data: [DONE]', { skip: !hasCurl && 'no curl' }, async () => {
  const body = JSON.stringify({ model: MODEL, stream: true, max_tokens: 4, temperature: 0,
    messages: [{ role: 'user', content: 'hi' }] });
  for (let i = 0; i < 20; i++) {
    // A hung stream fails here (timeout) instead of hanging the suite.
    const out = execFileSync('curl', ['--http1.0', '-sN', '--max-time', '20', '-H', 'content-type: application/json',
      '-d', body, `${server.url}/v1/chat/completions`], { encoding: 'utf8' });
    assert.ok(out.trimEnd().endsWith('data: [DONE]'), out);
  }
  const st = await waitFor(async () => {
    const s = (await http(`${server.url}/api/status`)).json;
    return s.http.requests_active <= 1 ? s : null;  // the status request itself
  }, 'no request left active');
  assert.ok(st.http.requests_active <= 1);
});

test('settings nested too deeply: 400, nothing stored, the next start is fine', async () => {
  for (const depth of [100000, 3000]) {
    const body = `{"chat_template_kwargs": {"a": ${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    const r = await http(`${server.url}/admin/api/models/${MODEL}/settings`, 'PUT', body);
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.error.message, /nests deeper than 128/);
  }
  assert.equal((await http(`${server.url}/health`)).status, 200, 'the server survived');
  const ok = await http(`${server.url}/admin/api/models/${MODEL}/settings`, 'PUT', { chat_template_kwargs: { enable_thinking: false } });
  assert.equal(ok.status, 200, ok.text);
  // The same home starts again (the settings file it wrote is valid).
  const { code } = await server.stop();
  assert.equal(code, 0);
  server = await startServer(serverArgs(), {}, server.home);
  const got = await http(`${server.url}/admin/api/models/${MODEL}/settings`);
  assert.deepEqual(got.json.settings.chat_template_kwargs, { enable_thinking: false });
  assert.ok(!readdirSync(server.home).some((f) => f.includes('.bad-')), 'nothing was set aside');
});

test('HEAD answers as GET does', { skip: !hasCurl && 'no curl' }, () => {
  for (const route of ['/admin/api/cache', '/v1/models', '/api/status', '/health']) {
    const head = execFileSync('curl', ['-sI', `${server.url}${route}`], { encoding: 'utf8' });
    assert.match(head, /^HTTP\/1\.1 200/, `${route}: ${head}`);
  }
});

test('a foreign Host is refused (DNS rebinding); localhost names are served', async () => {
  const evil = await new Promise((resolve, reject) => {
    const s = net.connect(server.port, '127.0.0.1');
    let buf = '';
    s.setEncoding('utf8');
    s.on('data', (d) => { buf += d; });
    s.on('end', () => resolve(buf));
    s.on('error', reject);
    s.write('GET /v1/models HTTP/1.1\r\nHost: rebind.evil.example:8000\r\nConnection: close\r\n\r\n');
  });
  assert.match(evil, /^HTTP\/1\.1 403/);
  assert.match(evil, /--allowed-hosts/);
  const local = await fetch(`http://localhost:${server.port}/health`).catch(() => null);
  if (local) assert.equal(local.status, 200);
});

test('bad tool schemas, tool_choice and Anthropic requests are 400 with the field', async () => {
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none' });
  const base = { model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'x' }] };
  for (const [extra, param] of [
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: 'notaschema' } }] }, 'tools[0].function.parameters'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 5 } } }] }, 'tools[0].function.parameters.type'],
    [{ tool_choice: 'sometimes' }, 'tool_choice'],
  ]) {
    await assert.rejects(client.chat.completions.create({ ...base, ...extra }), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.error?.param ?? e.param, param);
      return true;
    });
  }
  const noMax = await http(`${server.url}/v1/messages`, 'POST', { model: MODEL, messages: [{ role: 'user', content: 'x' }] });
  assert.equal(noMax.status, 400);
  assert.match(noMax.json.error.message, /max_tokens/);
  const block = await http(`${server.url}/v1/messages`, 'POST',
    { model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: [{ type: 'hologram' }] }] });
  assert.equal(block.status, 400);
  assert.match(block.json.error.message, /'hologram'/);
  const budget = await http(`${server.url}/v1/messages`, 'POST',
    { model: MODEL, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 512 }, messages: [{ role: 'user', content: 'x' }] });
  assert.equal(budget.status, 400);
  assert.match(budget.json.error.message, /budget_tokens/);
});

test('headers must arrive within --header-timeout', async () => {
  const closed = await new Promise((resolve) => {
    const s = net.connect(server.port, '127.0.0.1');
    const timer = setTimeout(() => { s.destroy(); resolve(false); }, 15000);
    s.on('close', () => { clearTimeout(timer); resolve(true); });
    s.on('error', () => {});
    s.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');  // never finished
  });
  assert.ok(closed, 'the server closed the trickling connection');
});
