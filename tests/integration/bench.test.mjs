// The Bench page's API and page against a real `llmhost serve` with the
// random-weight qwen3-tiny (tiny parameters: a run takes well under a
// second): POST /admin/api/bench runs, GET follows it and lists the kept
// results, which survive a restart (<home>/bench.json); DELETE forgets one;
// bad bodies are 400 naming the field, an unknown model 404, a second run
// while one goes 409. Then the dashboard's Bench page in Debian's Chromium
// (playwright-core): a run from the form, its results in the table, a
// delete, no console errors, a screenshot (LLMHOST_SCREENSHOT_DIR, or a new
// temporary folder; the path is printed). The browser part skips without
// /usr/bin/chromium or playwright-core.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, fixtures, http, waitFor } from './harness.mjs';

const CHROMIUM = process.env.LLMHOST_CHROMIUM || '/usr/bin/chromium';
let chromium = null;
try {
  ({ chromium } = await import('playwright-core'));
} catch { /* not installed: the browser test skips */ }
const skipBrowser = !existsSync(CHROMIUM) ? `${CHROMIUM} is absent (apt install chromium)`
  : !chromium ? 'playwright-core is not installed (npm ci in tests/integration)' : false;

const MODEL = 'qwen3-tiny';
const SMALL = { model: MODEL, prompt_tokens: 40, max_tokens: 4, concurrency: [1, 2] };
let dir;
let models;
let server;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-bench-'));
  models = path.join(dir, 'models');
  cpSync(path.join(fixtures, MODEL), path.join(models, MODEL), { recursive: true });
  server = await startServer(['--model-dir', models]);
});

after(async () => {
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  }
  rmSync(dir, { recursive: true, force: true });
});

const api = (method, p, body) => http(server.url + '/admin/api/bench' + p, method, body);

// Polls run `id` until it is no longer running; its last state.
async function finished(id) {
  return waitFor(async () => {
    const r = await api('GET', `/${id}`);
    assert.equal(r.status, 200, r.text);
    return r.json.status === 'running' ? null : r.json;
  }, `bench run ${id} to end`);
}

function checkResult(result, params) {
  const { prefill, cached_prefix: cached, decode, concurrency } = result;
  assert.ok(prefill.prompt_tokens >= 16 && prefill.prompt_tokens < 100, JSON.stringify(prefill));
  assert.ok(prefill.tokens_per_s > 0 && prefill.ttft_ms > 0, JSON.stringify(prefill));
  assert.equal(cached.prompt_tokens, prefill.prompt_tokens);
  assert.equal(decode.generated_tokens, params.max_tokens);
  assert.ok(decode.tokens_per_s > 0, JSON.stringify(decode));
  assert.deepEqual(concurrency.map((l) => l.concurrency), params.concurrency);
  for (const l of concurrency) {
    assert.equal(l.generated_tokens, params.max_tokens * l.concurrency, JSON.stringify(l));
    assert.ok(l.tokens_per_s > 0 && l.mean_ttft_ms > 0, JSON.stringify(l));
  }
}

test('a run: started, followed, kept, listed; persisted across a restart; deleted', async () => {
  const started = await api('POST', '', SMALL);
  assert.equal(started.status, 202, started.text);
  assert.match(started.json.id, /^bench-[0-9a-f]{12}$/);
  assert.equal(started.json.status, 'running');
  const done = await finished(started.json.id);
  assert.equal(done.status, 'done', JSON.stringify(done));
  assert.equal(done.model, MODEL);
  assert.deepEqual(done.params, { prompt_tokens: 40, max_tokens: 4, concurrency: [1, 2] });
  checkResult(done.result, SMALL);

  const list = await api('GET', '');
  assert.equal(list.status, 200);
  assert.equal(list.json.running, null);
  assert.deepEqual(list.json.results.map((r) => r.id), [started.json.id]);
  const file = JSON.parse(readFileSync(path.join(server.home, 'bench.json'), 'utf8'));
  assert.deepEqual(file.map((r) => r.id), [started.json.id], 'written through to <home>/bench.json');

  // The same home again: the result is still there.
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr);
  server = await startServer(['--model-dir', models], {}, server.home);
  const again = await api('GET', '');
  assert.deepEqual(again.json.results.map((r) => r.id), [started.json.id], 'kept across a restart');
  assert.deepEqual(again.json.results[0].result, done.result);

  const deleted = await api('DELETE', `/${started.json.id}`);
  assert.equal(deleted.status, 200, deleted.text);
  assert.deepEqual((await api('GET', '')).json.results, []);
  assert.equal((await api('GET', `/${started.json.id}`)).status, 404);
  assert.equal((await api('DELETE', `/${started.json.id}`)).status, 404);
  assert.deepEqual(JSON.parse(readFileSync(path.join(server.home, 'bench.json'), 'utf8')), []);
});

test('bad bodies are 400 naming the field; an unknown model 404', async () => {
  for (const [body, message] of [
    [{}, /'model' is required/],
    [{ ...SMALL, prompt_tokens: 100000 }, /'prompt_tokens' must be between 8 and 16384/],
    [{ ...SMALL, max_tokens: 0 }, /'max_tokens' must be between 2 and 2048/],
    [{ ...SMALL, concurrency: [1, 99] }, /'concurrency\[1\]' must be between 1 and 32/],
    [{ ...SMALL, concurrency: '1,4' }, /'concurrency' must be an array/],
    [{ ...SMALL, turbo: true }, /unknown field 'turbo'/],
    ['{"model": ', /JSON/i],
  ]) {
    const r = await api('POST', '', body);
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.error.message, message);
  }
  const missing = await api('POST', '', { ...SMALL, model: 'no-such-model' });
  assert.equal(missing.status, 404, missing.text);
  assert.equal((await api('GET', '')).json.running, null, 'no run started');
});

test('a second run while one goes is 409; the first one finishes', async () => {
  const first = await api('POST', '', { ...SMALL, concurrency: [1, 2, 3, 4] });
  assert.equal(first.status, 202, first.text);
  const second = await api('POST', '', SMALL);
  assert.equal(second.status, 409, second.text);
  assert.match(second.json.error.message, new RegExp(`a bench run is going \\(${first.json.id} on ${MODEL}\\)`));
  const running = (await api('GET', '')).json.running;
  assert.ok(running === null || running.id === first.json.id, JSON.stringify(running));
  assert.equal((await finished(first.json.id)).status, 'done');
  await api('DELETE', `/${first.json.id}`);
});

test('the Bench page: a run from the form, its results, a delete', { skip: skipBrowser }, async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const shots = process.env.LLMHOST_SCREENSHOT_DIR || mkdtempSync(path.join(tmpdir(), 'llmhost-bench-shots-'));
    mkdirSync(shots, { recursive: true });
    console.log(`bench screenshots: ${shots}`);
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}/admin#bench`);
    await page.locator(`#bench-model option[value="${MODEL}"]`).waitFor({ state: 'attached' });
    await page.locator('#bench-results td.empty').waitFor();
    // Past one KV block (256), and well below two, whatever the random words give (255 were seen for 300): the
    // cached prefix reuses one block.
    await page.fill('#bench-prompt', '400');
    await page.fill('#bench-max', '4');
    await page.fill('#bench-concurrency', '1, 2');
    await page.click('#bench-run');
    const row = page.locator('#bench-results tbody tr[data-bench]');
    await row.waitFor({ timeout: 60000 });
    assert.equal(await row.count(), 1);
    assert.ok(await page.locator('#bench-progress').isHidden(), 'the progress goes once the run ended');
    assert.ok(await page.locator('#bench-run').isEnabled());
    const cell = async (field) => row.locator(`[data-field="${field}"]`).textContent();
    assert.ok(Number(await cell('prefill')) > 0, await cell('prefill'));
    assert.ok(Number(await cell('decode')) > 0, await cell('decode'));
    assert.match(await cell('cached'), /^\d+\.\d \(256\/\d+ cached\)$/);
    assert.match(await cell('sweep'), /^×1: [\d.]+ tok\/s, [\d.]+ ms · ×2: [\d.]+ tok\/s, [\d.]+ ms$/);
    const kept = (await api('GET', '')).json.results;
    assert.equal(kept.length, 1);
    assert.deepEqual(kept[0].params, { prompt_tokens: 400, max_tokens: 4, concurrency: [1, 2] });
    await page.screenshot({ path: path.join(shots, 'bench.png'), fullPage: true });

    // A bad level: the server's 400 shown, no run.
    await page.fill('#bench-concurrency', '1, 99');
    await page.click('#bench-run');
    await page.locator('#bench-error', { hasText: "'concurrency[1]' must be between 1 and 32" }).waitFor();

    await row.locator('button[data-action="delete"]').click();
    await page.locator('#bench-results td.empty').waitFor();
    assert.deepEqual((await api('GET', '')).json.results, []);
    assert.deepEqual(errors.filter((e) => !/400 \(Bad Request\)/.test(e)), [], 'no console errors');
  } finally {
    await browser.close();
  }
});
