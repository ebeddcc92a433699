// GET /metrics against a real server: Prometheus's text format (checked by
// `promtool check metrics` where the prometheus package is installed, as
// scripts/setup.sh does), with the counters and histograms of the requests
// this test made: responses by route and status, generations by finish
// reason, tokens, latency histograms, model loads and unloads by cause,
// engine and memory gauges.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startScriptedServer, http } from './harness.mjs';

const MODEL = 'scripted';
let dir;
let server;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-metrics-'));
  server = await startScriptedServer(dir, MODEL, { replies: [{ when: 'Say hello.', text: 'Hello there, friend.' }] });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

// name{labels} value lines → [{name, labels, value}].
function parse(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/);
    assert.ok(m, 'a sample line: ' + line);
    const labels = {};
    for (const [, k, v] of (m[3] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    samples.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return samples;
}

function value(samples, name, labels = {}) {
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s ? s.value : undefined;
}

test('metrics count what the server did', async () => {
  const ask = (stream) => http(`${server.url}/v1/chat/completions`, 'POST', {
    model: MODEL, stream, messages: [{ role: 'user', content: 'Say hello.' }],
  });
  assert.equal((await ask(false)).status, 200);
  assert.equal((await ask(true)).status, 200);
  const short = await http(`${server.url}/v1/chat/completions`, 'POST', {
    model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'Say hello.' }],
  });
  assert.equal(short.status, 200);
  assert.equal((await http(`${server.url}/v1/models/nope`)).status, 404);
  assert.equal((await http(`${server.url}/no/such/route`)).status, 404);

  const r = await fetch(`${server.url}/metrics`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const text = await r.text();
  const s = parse(text);
  assert.equal(value(s, 'llmhost_build_info'), 1);
  assert.equal(value(s, 'llmhost_http_responses_total', { route: '/v1/chat/completions', status: '200' }), 3);
  assert.equal(value(s, 'llmhost_http_responses_total', { route: '/v1/models/{id}', status: '404' }), 1);
  assert.equal(value(s, 'llmhost_http_responses_total', { route: 'unmatched', status: '404' }), 1);
  assert.equal(value(s, 'llmhost_generations_total', { model: MODEL, finish_reason: 'stop' }), 2);
  assert.equal(value(s, 'llmhost_generations_total', { model: MODEL, finish_reason: 'length' }), 1);
  assert.ok(value(s, 'llmhost_generated_tokens_total', { model: MODEL }) > 2);
  assert.ok(value(s, 'llmhost_prompt_tokens_total', { model: MODEL }) > 0);
  assert.equal(value(s, 'llmhost_time_to_first_token_seconds_count', { model: MODEL }), 3);
  assert.equal(value(s, 'llmhost_time_to_first_token_seconds_bucket', { model: MODEL, le: '+Inf' }), 3);
  assert.equal(value(s, 'llmhost_request_seconds_count', { model: MODEL }), 3);
  assert.equal(value(s, 'llmhost_model_loaded', { model: MODEL }), 1);
  assert.ok(value(s, 'llmhost_model_memory_bytes', { model: MODEL }) > 0);
  assert.equal(value(s, 'llmhost_model_loads_total'), 1);
  assert.ok(value(s, 'llmhost_kv_blocks', { model: MODEL, state: 'free' }) > 0);
  assert.ok(value(s, 'llmhost_memory_ceiling_bytes', { budget: 'host' }) > 0);
  assert.equal(value(s, 'llmhost_prefix_cache_lookups_total', { model: MODEL }), 3);

  // An unload by request is counted under its cause.
  assert.equal((await http(`${server.url}/admin/api/models/${MODEL}/unload`, 'POST', {})).status, 200);
  const after = parse(await (await fetch(`${server.url}/metrics`)).text());
  assert.equal(value(after, 'llmhost_model_unloads_total', { cause: 'requested' }), 1);
  assert.equal(value(after, 'llmhost_model_loaded', { model: MODEL }), 0);
});

test('promtool accepts the text', async (t) => {
  const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  if (probe.error) {
    t.skip('promtool is not installed (Debian package prometheus, installed by scripts/setup.sh)');
    return;
  }
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});
