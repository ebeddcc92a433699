// Deleting models, `run` without a server and `bench`, as a user would:
// `llmhost rm` and the official `ollama` client's delete() against a real
// `llmhost serve` (the model leaves /v1/models, /api/tags and `llmhost ls`;
// a loaded idle model is unloaded first; a pinned one is refused with 409),
// `rm` and `run` with no server listening (in the model directory, in this
// process), and `bench` against the random-weight qwen3-tiny, on the server
// and in this process.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ollama } from 'ollama';
import { startServer, binary, fixtures, http } from './harness.mjs';

const NO_SERVER = 'http://127.0.0.1:9';  // nothing listens: connection refused
const SCRIPT = { replies: [
  { when: 'Say hello.', text: 'Hello there, friend.' },
  { when: 'What is 2+2? Think first.', text: '<think>\nTwo plus two is four.\n</think>\n\nThe answer is 4.' },
] };
let dir;
let models;
let server;

function synth(name) {
  const r = spawnSync(binary, ['synth-model', '--arch', 'scripted', '--script', path.join(dir, 'script.json'),
    '--out', path.join(models, name)], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

function llmhost(args, { input, url } = {}) {
  return spawnSync(binary, args, { input, encoding: 'utf8', timeout: 120000,
    env: { ...process.env, LLMHOST_URL: url || server.url, LLMHOST_LOG_LEVEL: 'warn' } });
}

async function ids() {
  const v1 = (await http(server.url + '/v1/models')).json.data.map((m) => m.id);
  const tags = (await http(server.url + '/api/tags')).json.models.map((m) => m.name);
  const ls = llmhost(['ls']).stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[0]);
  assert.deepEqual(tags.sort(), v1.sort(), 'the same models in /api/tags and /v1/models');
  assert.deepEqual(ls.sort(), v1.sort(), 'the same models in `llmhost ls` and /v1/models');
  return v1;
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-cli-models-'));
  models = path.join(dir, 'models');
  writeFileSync(path.join(dir, 'script.json'), JSON.stringify(SCRIPT));
  for (const name of ['scripted', 'by-cli', 'by-ollama', 'loaded', 'pinned', 'offline']) synth(name);
  cpSync(path.join(fixtures, 'qwen3-tiny'), path.join(models, 'qwen3-tiny'), { recursive: true });
  server = await startServer(['--model-dir', models]);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

test('rm through the server: the model and its files are gone everywhere', async () => {
  assert.ok((await ids()).includes('by-cli'));
  const r = llmhost(['rm', 'by-cli']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `deleted 'by-cli' (through the server at ${server.url})\n`);
  assert.ok(!existsSync(path.join(models, 'by-cli')));
  assert.ok(!(await ids()).includes('by-cli'));
  const again = llmhost(['rm', 'by-cli']);
  assert.equal(again.status, 1);
  assert.equal(again.stderr, "llmhost: 404: model 'by-cli' not found\n");
});

test('the ollama client deletes; an unknown model is its 404 string', async () => {
  const ollama = new Ollama({ host: server.url });
  assert.deepEqual(await ollama.delete({ model: 'by-ollama' }), { status: 'success' });
  assert.ok(!(await ollama.list()).models.some((m) => m.name === 'by-ollama'));
  assert.ok(!existsSync(path.join(models, 'by-ollama')));
  await assert.rejects(ollama.delete({ model: 'nope' }), (e) => e.status_code === 404 && e.error === "model 'nope' not found");
  const raw = await http(server.url + '/api/delete', 'DELETE', { model: 'nope' });
  assert.deepEqual([raw.status, raw.json], [404, { error: "model 'nope' not found" }]);
});

test('a loaded idle model is unloaded, then deleted; a pinned one is refused', async () => {
  const chat = await http(server.url + '/v1/chat/completions', 'POST',
    { model: 'loaded', messages: [{ role: 'user', content: 'Say hello.' }] });
  assert.equal(chat.status, 200, chat.text);
  assert.ok((await http(server.url + '/api/ps')).json.models.some((m) => m.name === 'loaded'));
  const del = await http(server.url + '/api/delete', 'DELETE', { model: 'loaded' });
  assert.equal(del.status, 200, del.text);
  assert.equal(del.text, '');
  assert.ok(!(await http(server.url + '/api/ps')).json.models.some((m) => m.name === 'loaded'));
  assert.ok(!(await ids()).includes('loaded'));

  const pin = await http(server.url + '/admin/api/models/pinned/pin', 'POST');
  assert.equal(pin.status, 200, pin.text);
  const r = llmhost(['rm', 'pinned']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^llmhost: 409: the model 'pinned' is pinned \(unpin it first\): not deleted\n$/);
  assert.ok(existsSync(path.join(models, 'pinned', 'config.json')));
  const admin = await http(server.url + '/admin/api/models/pinned', 'DELETE');
  assert.equal(admin.status, 409, admin.text);
  assert.equal((await http(server.url + '/admin/api/models/pinned/unpin', 'POST')).status, 200);
  const gone = await http(server.url + '/admin/api/models/pinned', 'DELETE');
  assert.equal(gone.status, 200, gone.text);
  assert.equal(gone.json.id, 'pinned');
  assert.ok(gone.json.bytes > 0 && gone.json.removed.length === 1, gone.text);
});

test('rm without a server: in the model directory, and says so', () => {
  const r = llmhost(['rm', 'offline', 'nope', '--model-dir', models], { url: NO_SERVER });
  assert.equal(r.status, 1, 'one of the two was not found');
  assert.match(r.stdout, new RegExp(`^deleted 'offline' \\(no server at ${NO_SERVER}: [\\d.]+ [KMG]?i?B from ${models.replaceAll('/', '\\/')}\\/offline\\)\\n$`));
  assert.match(r.stderr, /model 'nope' not found \(no server at/);
  assert.ok(!existsSync(path.join(models, 'offline')));
});

test('run without a server: the model in this process, the same answers', () => {
  const r = llmhost(['run', 'scripted', '--model-dir', models], { url: NO_SERVER,
    input: 'Say hello.\nWhat is 2+2? Think first.\n/bye\n' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'Hello there, friend.\nThinking: Two plus two is four.\n\nThe answer is 4.\n');
  assert.match(r.stderr, /no server at http:\/\/127\.0\.0\.1:9: running .*scripted in this process/);
  // A random-weight model and a prompt on the command line: bounded by --max-tokens.
  const once = llmhost(['run', path.join(models, 'qwen3-tiny'), 'Hi', 'there', '--max-tokens', '4'], { url: NO_SERVER });
  assert.equal(once.status, 0, once.stderr);
  assert.ok(once.stdout.endsWith('\n'));
  const missing = llmhost(['run', 'nope', '--model-dir', models], { url: NO_SERVER, input: 'hi\n' });
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /no model 'nope' in .*\(models: .*scripted/);
});

// `bench --json --prompt-tokens 640 --decode-tokens 8 --concurrency 1,3`'s figures. The prompt's random words
// come to 640 tokens give or take ~15% (508 were seen for 600): between two and three full 256-token blocks.
function checkBench(b) {
  assert.equal(b.model, 'qwen3-tiny');
  assert.ok(b.prefill.prompt_tokens > 512 && b.prefill.prompt_tokens < 768, JSON.stringify(b.prefill));
  assert.ok(b.prefill.tokens_per_s > 0 && b.prefill.ttft_ms > 0, JSON.stringify(b.prefill));
  assert.equal(b.cached_prefix.prompt_tokens, b.prefill.prompt_tokens);
  assert.equal(b.cached_prefix.cached_tokens, 512, JSON.stringify(b.cached_prefix));
  assert.equal(b.decode.generated_tokens, 8);
  assert.ok(b.decode.tokens_per_s > 0, JSON.stringify(b.decode));
  assert.deepEqual(b.concurrency.map((l) => l.concurrency), [1, 3]);
  for (const l of b.concurrency) {
    assert.equal(l.generated_tokens, 8 * l.concurrency, JSON.stringify(l));
    assert.ok(l.tokens_per_s > 0 && l.mean_ttft_ms > 0, JSON.stringify(l));
  }
}
const BENCH_ARGS = ['--json', '--prompt-tokens', '640', '--decode-tokens', '8', '--concurrency', '1,3'];
const TABLE_HEAD = /^TEST\s+PROMPT\s+CACHED\s+GENERATED\s+TTFT ms\s+TOKENS\/S$/m;

test('bench --json: positive rates, the cached prefix reused, every concurrency level', () => {
  // Two KV blocks of 256 positions and a part: the cached prefix is the two full blocks.
  const r = llmhost(['bench', 'qwen3-tiny', ...BENCH_ARGS]);
  assert.equal(r.status, 0, r.stderr);
  const b = JSON.parse(r.stdout);
  checkBench(b);
  assert.equal(b.in_process, false);
  assert.equal(b.url, server.url);
  const table = llmhost(['bench', 'qwen3-tiny', '--prompt-tokens', '16', '--decode-tokens', '4', '--concurrency', '2']);
  assert.equal(table.status, 0, table.stderr);
  assert.match(table.stdout, new RegExp(`^llmhost bench: qwen3-tiny at ${server.url}$`, 'm'));
  assert.match(table.stdout, TABLE_HEAD);
  assert.match(table.stdout, /^concurrency 2\s/m);
});

test('bench without a server: the model in this process, the same figures', () => {
  const r = llmhost(['bench', 'qwen3-tiny', '--model-dir', models, ...BENCH_ARGS], { url: NO_SERVER });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /no server at http:\/\/127\.0\.0\.1:9: benchmarking .*qwen3-tiny in this process/);
  const b = JSON.parse(r.stdout);
  checkBench(b);
  assert.equal(b.in_process, true);
  assert.equal(b.url, undefined);
  const table = llmhost(['bench', path.join(models, 'qwen3-tiny'), '--prompt-tokens', '16', '--decode-tokens', '4',
    '--concurrency', '2'], { url: NO_SERVER });
  assert.equal(table.status, 0, table.stderr);
  assert.match(table.stdout, /^llmhost bench: .*qwen3-tiny in this process$/m);
  assert.match(table.stdout, TABLE_HEAD);
  assert.match(table.stdout, /^concurrency 2\s+-\s+-\s+8\s/m);
  const missing = llmhost(['bench', 'nope', '--model-dir', models], { url: NO_SERVER });
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /bench: no server at http:\/\/127\.0\.0\.1:9, and no model 'nope' in /);
});
