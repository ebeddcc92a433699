// curl and raw sockets against `llmhost serve`: SSE through curl, the body
// limit (413), CORS preflight, comment keep-alives, and the connection
// capacity of the event-driven server: 5,000 idle keep-alive connections,
// then 500 concurrent streaming requests (--max-concurrent-requests 512).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { startServer, fixtures, http, parseSse, engineStatus, waitFor } from './harness.mjs';

const MODEL = 'qwen3-tiny';
const ORIGIN = 'http://app.example:3000';
let server;

before(async () => {
  server = await startServer(['--model-dir', fixtures, '--sse-keepalive', 'comment', '--cors-origins', ORIGIN,
    '--max-body-size', '1MB', '--max-concurrent-requests', '512']);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
});

const hasCurl = spawnSync('curl', ['--version']).status === 0;

test('curl: streamed chat with a comment keep-alive first', { skip: !hasCurl && 'no curl' }, () => {
  const body = JSON.stringify({ model: MODEL, stream: true, max_tokens: 4, temperature: 0,
    messages: [{ role: 'user', content: 'hi' }] });
  const out = execFileSync('curl', ['-sN', '-H', 'content-type: application/json', '-d', body,
    `${server.url}/v1/chat/completions`], { encoding: 'utf8' });
  const events = parseSse(out);
  assert.equal(events[0].event, ':', 'the first event is the keep-alive comment');
  assert.equal(events.at(-1).data, '[DONE]');
});

test('curl: a body over --max-body-size is 413', { skip: !hasCurl && 'no curl' }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'llmhost-it-'));
  const file = path.join(dir, 'big.json');
  writeFileSync(file, '{"model":"x","prompt":"' + 'a'.repeat(2 << 20) + '"}');
  const out = execFileSync('curl', ['-s', '-w', '\n%{http_code}', '-H', 'content-type: application/json',
    '--data-binary', `@${file}`, `${server.url}/v1/completions`], { encoding: 'utf8' });
  const lines = out.trim().split('\n');
  assert.equal(lines.at(-1), '413');
  assert.match(JSON.parse(lines.slice(0, -1).join('\n')).error.message, /max-body-size/);
});

test('CORS preflight and headers', async () => {
  const pre = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get('access-control-allow-origin'), ORIGIN);
  assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
  const other = await fetch(`${server.url}/v1/models`, { method: 'OPTIONS', headers: { origin: 'http://evil.example' } });
  assert.equal(other.status, 403);
  const get = await fetch(`${server.url}/v1/models`, { headers: { origin: ORIGIN } });
  assert.equal(get.headers.get('access-control-allow-origin'), ORIGIN);
});

// Opens a socket and sends one request; resolves with the socket once the
// full response is in (Content-Length or the chunked terminator).
function requestOn(port, raw, isDone) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let buf = '';
    s.setEncoding('utf8');
    s.on('error', reject);
    s.on('data', (d) => {
      buf += d;
      if (isDone(buf)) resolve({ socket: s, text: buf });
    });
    s.on('connect', () => s.write(raw));
  });
}

test('5,000 idle keep-alive connections, then 500 concurrent streams', async () => {
  const idle = [];
  const health = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
  for (let i = 0; i < 5000; i += 250) {
    const batch = await Promise.all(Array.from({ length: 250 }, () =>
      requestOn(server.port, health, (b) => b.includes('{"status":"ok"}'))));
    idle.push(...batch.map((r) => r.socket));
  }
  const st = await http(`${server.url}/api/status`);
  assert.ok(st.json.http.connections >= 5000, JSON.stringify(st.json.http));

  const body = JSON.stringify({ model: MODEL, prompt: 'hello', max_tokens: 8, temperature: 0, stream: true });
  const raw = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const t0 = Date.now();
  const streams = await Promise.all(Array.from({ length: 500 }, () =>
    requestOn(server.port, raw, (b) => b.includes('data: [DONE]') && b.endsWith('0\r\n\r\n'))));
  const ms = Date.now() - t0;
  for (const r of streams) {
    assert.match(r.text, /^HTTP\/1\.1 200/);
    r.socket.destroy();
  }
  console.log(`# 500 concurrent streams (8 tokens each) beside 5000 idle connections: ${ms} ms`);
  // The idle connections are still served.
  const again = await Promise.all(idle.slice(0, 10).map((s) => new Promise((resolve) => {
    let buf = '';
    s.on('data', (d) => { buf += d; if (buf.includes('"ok"')) resolve(buf); });
    s.write(health);
  })));
  assert.equal(again.length, 10);
  for (const s of idle) s.destroy();
  await waitFor(async () => (await engineStatus(server.url, MODEL))?.running === 0, 'the engine to go idle');
});
