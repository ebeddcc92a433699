// Request ids and JSON logs against `llmhost serve --log-format json`: every
// response carries X-Request-Id (the client's when sane, else a generated
// one), every stderr line is a JSON object, and a request's completion and
// error lines carry the id its response did.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer, fixtures, http, parseSse, waitFor } from './harness.mjs';

const MODEL = 'qwen3-tiny';
const GENERATED = /^[0-9a-f]{16}$/;
let server;

before(async () => {
  server = await startServer(['--model-dir', fixtures, '--log-format', 'json'], { LLMHOST_LOG_LEVEL: 'info' });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  // Every line, to the last one written while draining, is one JSON object.
  for (const line of server.stderr.split('\n').filter((l) => l !== '')) {
    const j = JSON.parse(line);
    assert.match(j.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, line);
    assert.ok(['debug', 'info', 'warn', 'error'].includes(j.level), line);
    assert.equal(typeof j.msg, 'string', line);
  }
});

function logLines() {
  return server.stderr.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
}

// The first log line with this request id that satisfies `pred`.
function waitForLine(id, pred, what) {
  return waitFor(() => logLines().find((j) => j.request_id === id && pred(j)), what);
}

const chat = (extra = {}) => ({ model: MODEL, max_tokens: 3, temperature: 0,
  messages: [{ role: 'user', content: 'hi' }], ...extra });

test('a response without an incoming id gets a generated one, new per request', async () => {
  const a = await http(`${server.url}/health`);
  const b = await http(`${server.url}/v1/models`);
  assert.match(a.headers.get('x-request-id'), GENERATED);
  assert.match(b.headers.get('x-request-id'), GENERATED);
  assert.notEqual(a.headers.get('x-request-id'), b.headers.get('x-request-id'));
  const missing = await http(`${server.url}/no/such/route`);
  assert.equal(missing.status, 404);
  assert.match(missing.headers.get('x-request-id'), GENERATED);
});

test('a sane incoming id is echoed, on plain and streamed responses', async () => {
  const plain = await http(`${server.url}/v1/models`, 'GET', undefined, { 'x-request-id': 'trace-7f.A_b:c/d' });
  assert.equal(plain.headers.get('x-request-id'), 'trace-7f.A_b:c/d');
  const streamed = await http(`${server.url}/v1/chat/completions`, 'POST', chat({ stream: true }),
    { 'x-request-id': 'stream-1' });
  assert.equal(streamed.status, 200);
  assert.equal(streamed.headers.get('x-request-id'), 'stream-1');
  assert.equal(parseSse(streamed.text).at(-1).data, '[DONE]');
});

test('an insane incoming id is replaced', async () => {
  for (const bad of ['two words', 'x'.repeat(129)]) {
    const r = await http(`${server.url}/health`, 'GET', undefined, { 'x-request-id': bad });
    assert.match(r.headers.get('x-request-id'), GENERATED, JSON.stringify(bad));
  }
  // Bytes fetch refuses to send: a control character and non-ASCII.
  for (const bad of ['tab\there', 'caf\u00e9']) {
    const reply = await new Promise((resolve, reject) => {
      const s = net.connect(server.port, '127.0.0.1', () => {
        s.write(Buffer.concat([Buffer.from('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Request-Id: '),
          Buffer.from(bad, 'latin1'), Buffer.from('\r\n\r\n')]));
      });
      let data = '';
      s.on('data', (d) => { data += d; });
      s.on('end', () => resolve(data));
      s.on('error', reject);
    });
    const m = reply.match(/^x-request-id: (.*)\r$/im);
    assert.ok(m, reply);
    assert.match(m[1], GENERATED, JSON.stringify(bad));
  }
});

test('the completion line carries the response\'s request id', async () => {
  const given = await http(`${server.url}/v1/chat/completions`, 'POST', chat(), { 'x-request-id': 'it-json-1' });
  assert.equal(given.status, 200, given.text);
  assert.equal(given.headers.get('x-request-id'), 'it-json-1');
  const line = await waitForLine('it-json-1', (j) => j.msg.includes('completion'), 'the completion line');
  assert.equal(line.level, 'info');
  assert.equal(line.path, '/v1/chat/completions');
  assert.equal(line.completion_tokens, given.json.usage.completion_tokens);
  assert.equal(line.prompt_tokens, given.json.usage.prompt_tokens);
  assert.equal(typeof line.finish, 'string');

  // A generated id, on a stream, correlates the same way.
  const streamed = await http(`${server.url}/v1/completions`, 'POST',
    { model: MODEL, prompt: 'once upon', max_tokens: 2, stream: true });
  const id = streamed.headers.get('x-request-id');
  assert.match(id, GENERATED);
  const streamedLine = await waitForLine(id, (j) => j.msg.includes('completion'), 'the streamed completion line');
  assert.equal(streamedLine.path, '/v1/completions');
});

test('an error line carries the request id', async () => {
  const r = await http(`${server.url}/v1/chat/completions`, 'POST', '{"model": ', { 'x-request-id': 'bad-json-1' });
  assert.equal(r.status, 400);
  assert.equal(r.headers.get('x-request-id'), 'bad-json-1');
  const line = await waitForLine('bad-json-1', (j) => j.status === 400, 'the error line');
  assert.equal(line.path, '/v1/chat/completions');
  assert.equal(typeof line.error, 'string');
});

test('without --log-format the lines keep the text format', async () => {
  const plain = await startServer(['--model-dir', fixtures], { LLMHOST_LOG_LEVEL: 'info' });
  // Answered: the server runs (and handles SIGTERM) by now.
  assert.equal((await http(`${plain.url}/health`)).status, 200);
  const { code } = await plain.stop();
  assert.equal(code, 0);
  const lines = plain.stderr.split('\n').filter((l) => l !== '');
  assert.ok(lines.length > 0);
  for (const line of lines) assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [DIWE] /, line);
});
