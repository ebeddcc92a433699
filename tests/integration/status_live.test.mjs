// The status JSON's live requests (/admin/api/status, /api/status: each
// loaded model's `requests`) against a real `llmhost serve` with the
// random-weight qwen3-tiny: while a long completion streams, the request is
// listed under its X-Request-Id with its prompt, prefill progress, output
// tokens, TTFT and decode speed, all consistent from poll to poll; once it
// has finished the list is empty again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, fixtures, http, parseSse, waitFor } from './harness.mjs';

const MODEL = 'qwen3-tiny';
const MAX_TOKENS = 3000;
let dir;
let server;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-status-live-'));
  cpSync(path.join(fixtures, MODEL), path.join(dir, 'models', MODEL), { recursive: true });
  server = await startServer(['--model-dir', path.join(dir, 'models')]);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

async function modelEntry(route) {
  const r = await http(server.url + route);
  assert.equal(r.status, 200, r.text);
  return r.json.models.find((m) => m.id === MODEL);
}

const kStates = ['queued', 'prefilling', 'generating'];

test('a streaming completion is listed with its progress while it runs, then gone', async () => {
  // Loaded first, so that the stream's time is all generation.
  const warm = await http(`${server.url}/v1/completions`, 'POST', { model: MODEL, prompt: 'hi', max_tokens: 1 });
  assert.equal(warm.status, 200, warm.text);
  const idle = await modelEntry('/api/status');
  assert.deepEqual(idle.requests, []);
  assert.equal(idle.requests_total, 0);
  assert.equal(typeof idle.running, 'number', 'the engine figures stay');

  const RID = 'live-status-test-1';
  const body = { model: MODEL, prompt: 'word '.repeat(300), max_tokens: MAX_TOKENS, ignore_eos: true,
    stream: true, stream_options: { include_usage: true } };
  const stream = http(`${server.url}/v1/completions`, 'POST', body, { 'x-request-id': RID });
  let done = false;
  stream.finally(() => { done = true; });

  const seen = [];
  const routes = ['/admin/api/status', '/api/status'];
  for (let i = 0; !done; i++) {
    const m = await modelEntry(routes[i % 2]);
    assert.ok(m.requests_total >= m.requests.length);
    const mine = m.requests.find((r) => r.request_id === RID);
    if (mine) seen.push(mine);
  }
  const res = await stream;
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers.get('x-request-id'), RID);
  const usage = parseSse(res.text).map((e) => e.data).filter((d) => d !== '[DONE]')
    .map((d) => JSON.parse(d)).find((c) => c.usage).usage;
  assert.equal(usage.completion_tokens, MAX_TOKENS);

  assert.ok(seen.length > 0, 'the request was listed while it streamed');
  for (const [i, r] of seen.entries()) {
    const where = `poll ${i}: ${JSON.stringify(r)}`;
    assert.ok(kStates.includes(r.state), where);
    assert.equal(typeof r.id, 'number', where);
    assert.equal(r.prompt_tokens, usage.prompt_tokens, where);
    assert.ok(r.prompt_done >= 0 && r.prompt_done <= r.prompt_tokens, where);
    assert.ok(r.generated_tokens >= 0 && r.generated_tokens <= MAX_TOKENS, where);
    assert.ok(r.age_s >= 0 && r.age_s < 600, where);
    if (r.state === 'generating') assert.equal(r.prompt_done, r.prompt_tokens, where);
    if (r.ttft_s === null) {
      assert.equal(r.generated_tokens, 0, where);
      assert.equal(r.tokens_per_s, 0, where);
    } else {
      assert.ok(r.ttft_s > 0 && r.ttft_s <= r.age_s, where);
      assert.ok(r.generated_tokens >= 1, where);
    }
    if (i > 0) {
      const before = seen[i - 1];
      assert.equal(r.id, before.id, where);
      assert.ok(kStates.indexOf(r.state) >= kStates.indexOf(before.state), where);
      assert.ok(r.prompt_done >= before.prompt_done && r.generated_tokens >= before.generated_tokens, where);
      assert.ok(r.age_s >= before.age_s, where);
    }
  }
  const decoding = seen.filter((r) => r.state === 'generating' && r.generated_tokens >= 2);
  assert.ok(decoding.length > 0, `seen generating: ${JSON.stringify(seen.slice(-3))}`);
  assert.ok(decoding.every((r) => r.tokens_per_s > 0), JSON.stringify(decoding.slice(-3)));

  // The final step's snapshot may come just after the client's last event.
  const after = await waitFor(async () => {
    const m = await modelEntry('/admin/api/status');
    return m.requests_total === 0 && m;
  }, 'the finished request to leave the list');
  assert.deepEqual(after.requests, []);
});
