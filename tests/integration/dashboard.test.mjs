// The web dashboard (/admin) in Debian's Chromium, driven by playwright-core
// (which never downloads a browser): every page loads without console
// errors, Status shows the memory bars, the loaded model, the last hour's
// charts (sampled every second here: --stats-interval 1) and a streaming
// request's live row (prefill done, tokens, tok/s, age, TTFT), Models unloads,
// loads, pins and sets the TTL (an embedder beside the chat model labelled
// with its kind, and not offered by Chat), Logs tails the server's log with a
// level filter, Chat streams the scripted model's reply with its reasoning
// apart, sign-in with an API key sets the session cookie and POSTs need the
// CSRF token. Models also downloads from a fake Hub (fake_hub_serve.py, the
// server's HF_ENDPOINT) with live progress, a refused repo's message and a
// cancel, and edits a model's alias and settings (saved, kept across a
// reload, the server's validation errors shown). Screenshots of every page go to $LLMHOST_SCREENSHOT_DIR (or a
// new temporary folder; the path is printed). Skipped without /usr/bin/chromium
// (apt install chromium) or playwright-core (npm ci).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScriptedServer, http, waitFor, fixtures } from './harness.mjs';

const CHROMIUM = process.env.LLMHOST_CHROMIUM || '/usr/bin/chromium';
let chromium = null;
try {
  ({ chromium } = await import('playwright-core'));
} catch { /* not installed: the browser tests skip */ }
const skipBrowser = !existsSync(CHROMIUM) ? `${CHROMIUM} is absent (apt install chromium)`
  : !chromium ? 'playwright-core is not installed (npm ci in tests/integration)' : false;

const MODEL = 'scripted';
const EMBEDDER = 'bert-tiny-embed';
const KEY = 'dashboard-test-key';
const SCRIPT = {
  replies: [
    { when: 'Write a long essay', text: 'Essay words go on. '.repeat(4000) },
    { when: 'Think about it', text: '<think>\nPondering the question.\n</think>\n\nThe answer is 42.' },
    { text: 'Hello from the scripted model.' },
  ],
};

let dir;
let open;    // a server without API keys: the dashboard is open
let locked;  // a server with --api-key: sign-in first
let browser;
let shots;
let hub;     // the fake Hugging Face Hub the open server pulls from

const PULLED = 'test-org/qwen3-tiny';  // 420 KiB of weights sent over 3 s: progress to see
const STUCK = 'test-org/stuck';       // weights sent over 10 minutes: cancelled

// fake_hub_serve.py on a random port: {url, stop()}.
async function startFakeHub(args) {
  const proc = spawn('python3', [path.join(import.meta.dirname, 'fake_hub_serve.py'), ...args],
    { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^port (\d+)$/m);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`fake_hub_serve.py exited (${code})`)));
  });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  return { url: `http://127.0.0.1:${port}`, stop: () => { proc.stdin.end(); return exited; } };
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-dashboard-'));
  mkdirSync(path.join(dir, 'open', 'models'), { recursive: true });
  // An embedder beside the chat model: listed with its kind, never offered to Chat.
  symlinkSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'data', 'encoders', EMBEDDER),
    path.join(dir, 'open', 'models', EMBEDDER));
  mkdirSync(path.join(dir, 'locked'));
  const qwen = path.join(fixtures, 'qwen3-tiny');
  hub = await startFakeHub(['--repo', `${PULLED}=${qwen}`, '--slow', `${PULLED}=3`,
    '--repo', `${STUCK}=${qwen}+stuck`, '--slow', `${STUCK}=600`]);
  // Info lines for the Logs page; a sample a second for the charts.
  open = await startScriptedServer(path.join(dir, 'open'), MODEL, SCRIPT, ['--stats-interval', '1'],
    { LLMHOST_LOG_LEVEL: 'info', HF_ENDPOINT: hub.url, HF_TOKEN: '' });
  locked = await startScriptedServer(path.join(dir, 'locked'), MODEL, SCRIPT, ['--api-key', KEY]);
  if (!skipBrowser) {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    shots = process.env.LLMHOST_SCREENSHOT_DIR || mkdtempSync(path.join(tmpdir(), 'llmhost-dashboard-shots-'));
    mkdirSync(shots, { recursive: true });
    console.log(`dashboard screenshots: ${shots}`);
  }
});

after(async () => {
  if (browser) await browser.close();
  for (const s of [open, locked]) {
    if (!s) continue;
    const { code } = await s.stop();
    assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + s.stderr);
  }
  if (hub) await hub.stop();
  rmSync(dir, { recursive: true, force: true });
});

// A page that records console errors and uncaught exceptions.
async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.errors = [];
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(m.text()); });
  page.on('pageerror', (e) => page.errors.push(String(e)));
  return page;
}

async function screenshot(page, name) {
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}

async function modelStatus(server, headers = {}) {
  const r = await http(`${server.url}/v1/models/status`, 'GET', undefined, headers);
  return r.json.models.find((m) => m.id === MODEL);
}

test('assets: content types, no-cache, ETag revalidation, 404 for unknown files', async () => {
  const index = await http(`${open.url}/admin`);
  assert.equal(index.status, 200);
  assert.equal(index.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(index.headers.get('cache-control'), 'no-cache');
  assert.match(index.headers.get('content-security-policy'), /script-src 'self'/);
  assert.match(index.text, /<title>llmhost<\/title>/);
  assert.equal((await http(`${open.url}/admin/`)).text, index.text);
  const css = await http(`${open.url}/admin/style.css`);
  assert.equal(css.headers.get('content-type'), 'text/css; charset=utf-8');
  const js = await http(`${open.url}/admin/app.js`);
  assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  const etag = js.headers.get('etag');
  assert.match(etag, /^"[0-9a-f]{20}"$/);
  const again = await http(`${open.url}/admin/app.js`, 'GET', undefined, { 'if-none-match': etag });
  assert.equal(again.status, 304);
  assert.equal(again.text, '');
  assert.equal((await http(`${open.url}/admin/nope.js`)).status, 404);
  assert.equal((await http(`${open.url}/admin/api/nope`)).status, 404);
  // With keys, the page and its files stay open (the sign-in form is there); the API is not.
  assert.equal((await http(`${locked.url}/admin`)).status, 200);
  assert.equal((await http(`${locked.url}/admin/app.js`)).status, 200);
  assert.equal((await http(`${locked.url}/api/status`)).status, 401);
  assert.deepEqual((await http(`${locked.url}/admin/api/session`)).json, { auth: 'key', signed_in: false });
  assert.deepEqual((await http(`${open.url}/admin/api/session`)).json, { auth: 'open' });
});

test('status: memory bars and the loaded model after a request', { skip: skipBrowser }, async () => {
  const r = await http(`${open.url}/v1/chat/completions`, 'POST',
    { model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(r.status, 200, r.text);
  const page = await newPage();
  await page.goto(`${open.url}/admin`);
  await page.locator('#memory .budget[data-budget="Host"] .bar .fill.usage').waitFor();
  const host = page.locator('#memory .budget[data-budget="Host"]');
  assert.equal(await host.locator('.mark.ceiling').count(), 1);
  assert.match(await host.locator('.figures').innerText(), /usage .* ceiling \d/);
  await page.locator(`#loaded-models tr[data-model="${MODEL}"]`).waitFor();
  assert.match(await page.locator('#totals').innerText(), /Generations\s+1\b/);

  // The charts: the request shows as a rise of generated tokens/s and a TTFT point.
  const history = await waitFor(async () => {
    const h = (await http(`${open.url}/admin/api/history`)).json;
    const ready = h.samples.some((x) => x.generated_tps > 0) && h.samples.some((x) => x.ttft_mean_s !== null);
    return ready && h.samples.length >= 2 && h;
  }, 'samples with generated tokens and a TTFT');
  assert.equal(history.interval_s, 1);
  const busy = history.samples.find((x) => x.ttft_mean_s !== null);
  assert.ok(busy.ttft_mean_s > 0 && busy.ttft_mean_s < 60, `TTFT ${busy.ttft_mean_s}`);
  assert.equal(busy.memory[0].name, 'Host');
  assert.ok(busy.memory[0].usage_bytes > 0);
  const generated = page.locator('#charts [data-chart="throughput"] [data-series="generated"] polyline');
  await generated.waitFor();
  // Some point lies above the zero line (y grows downwards; zero is the lowest grid line).
  const zeroY = Number(await page.locator('#charts [data-chart="throughput"] line.grid').first().getAttribute('y1'));
  await waitFor(async () => (await generated.getAttribute('points')).split(' ').some((p) => Number(p.split(',')[1]) < zeroY - 1),
    'the throughput chart to rise');
  assert.ok(await page.locator('#charts [data-chart="ttft"] [data-series="TTFT"] :is(polyline, circle)').count() >= 1);
  await page.locator('#charts [data-chart="memory"] [data-series="Host"] polyline').waitFor();
  assert.match(await page.locator('#charts-note').innerText(), /one every 1 s/);
  await page.locator('#live-requests td.empty', { hasText: 'No request in progress' }).waitFor();

  // A streaming request is a live row (the page's own polling brings it), gone once the client stops it.
  const RID = 'dashboard-live-1';
  const stop = new AbortController();
  const res = await fetch(`${open.url}/v1/chat/completions`, { method: 'POST', signal: stop.signal,
    headers: { 'content-type': 'application/json', 'x-request-id': RID },
    body: JSON.stringify({ model: MODEL, stream: true,
      messages: [{ role: 'user', content: 'Write a long essay' }] }) });
  assert.equal(res.status, 200);
  const row = page.locator('#live-requests tr[data-state="generating"]', { hasText: RID });
  await row.waitFor();
  const cells = await row.locator('td').allInnerTexts();
  assert.equal(cells.length, 8, cells.join(' | '));
  assert.equal(cells[0], MODEL);
  assert.equal(cells[2], 'generating');
  const [done, total] = cells[3].trim().split(' / ').map((x) => Number(x.replace(/,/g, '')));
  assert.ok(total > 0 && done === total, `prefill ${cells[3]}`);
  const bar = row.locator('progress');
  assert.equal(Number(await bar.getAttribute('value')), Number(await bar.getAttribute('max')));
  assert.ok(Number(cells[4].replace(/,/g, '')) > 0, `generated ${cells[4]}`);
  assert.ok(Number(cells[5]) > 0, `tokens/s ${cells[5]}`);
  assert.match(cells[6], /^\d+(\.\d)? m?s$/);
  assert.match(cells[7], /^\d+(\.\d)? m?s$/);
  await screenshot(page, 'status');
  stop.abort();
  await page.locator('#live-requests td.empty', { hasText: 'No request in progress' }).waitFor();
  assert.equal(await page.locator('#live-requests tr[data-request]').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('models: unload and load a model from the table', { skip: skipBrowser }, async () => {
  await http(`${open.url}/admin/api/models/${MODEL}/load`, 'POST');
  const page = await newPage();
  await page.goto(`${open.url}/admin#models`);
  const row = page.locator(`#model-table tr[data-model="${MODEL}"]`);
  await row.locator('.state', { hasText: /^loaded$/ }).waitFor();
  assert.equal(await page.locator(`#model-table tr[data-model="${EMBEDDER}"] span.kind`).innerText(), 'embedding');
  assert.equal(await row.locator('span.kind').count(), 0, 'a chat model carries no kind label');
  await row.locator('button[data-action="unload"]').click();
  await row.locator('.state', { hasText: 'not loaded' }).waitFor();
  assert.match(await page.locator('#models-result').innerText(), /unload scripted: ok/);
  assert.equal((await modelStatus(open)).loaded, false);
  await row.locator('button[data-action="load"]').click();
  await row.locator('.state', { hasText: /^loaded$/ }).waitFor();
  assert.equal((await modelStatus(open)).loaded, true);
  await row.locator('button[data-action="pin"]').click();
  await row.locator('button[data-action="unpin"]').waitFor();
  assert.equal((await modelStatus(open)).pinned, true);
  await row.locator('button[data-action="unpin"]').click();
  await row.locator('button[data-action="pin"]').waitFor();
  assert.equal((await modelStatus(open)).pinned, false);

  // TTL: set, shown back after the refresh, then cleared (the server's --idle-ttl: none).
  await row.locator('input.ttl').fill('600');
  await row.locator('button[data-action="ttl"]').click();
  await page.locator('#models-result', { hasText: 'ttl scripted: ok' }).waitFor();
  assert.equal((await modelStatus(open)).ttl_seconds, 600);
  assert.equal(await row.locator('input.ttl').inputValue(), '600');
  await row.locator('input.ttl').fill('');
  await row.locator('button[data-action="ttl"]').click();
  await waitFor(async () => (await modelStatus(open)).ttl_seconds === null, 'the TTL to clear');
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('logs: a live tail of the server log, filtered by level', { skip: skipBrowser }, async () => {
  const page = await newPage();
  await page.goto(`${open.url}/admin#logs`);
  await page.locator('#logs-state', { hasText: 'live' }).waitFor();
  // A request logged while the page is open arrives live.
  const r = await http(`${open.url}/v1/chat/completions`, 'POST',
    { model: MODEL, messages: [{ role: 'user', content: 'logged request' }] });
  assert.equal(r.status, 200, r.text);
  const line = page.locator('#log-lines .log-line.level-info', { hasText: '/v1/chat/completions: prompt' });
  await line.last().waitFor();
  await screenshot(page, 'logs');
  // warn and above: the same backlog without its info lines.
  await page.locator('#log-level').selectOption('warn');
  await page.locator('#logs-state', { hasText: 'live' }).waitFor();
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(await page.locator('#log-lines .log-line.level-info').count(), 0);
  await page.locator('#log-level').selectOption('info');
  await line.first().waitFor();
  // The stream over plain HTTP: a bad level is refused.
  assert.equal((await http(`${open.url}/admin/api/logs?level=loud`)).status, 400);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('chat: streams the reply as text, reasoning apart, kept across reloads', { skip: skipBrowser }, async () => {
  const page = await newPage();
  await page.goto(`${open.url}/admin#chat`);
  await page.locator(`#chat-model option[value="${MODEL}"]`).waitFor({ state: 'attached' });
  assert.equal(await page.locator(`#chat-model option[value="${EMBEDDER}"]`).count(), 0, 'an embedder cannot chat');
  await page.locator('#chat-input').fill('Think about it');
  await page.locator('#chat-input').press('Enter');
  const reply = page.locator('.message.assistant').last();
  await reply.locator('.content', { hasText: 'The answer is 42.' }).waitFor();
  await page.locator('#chat-send:enabled').waitFor();
  assert.equal((await reply.locator('.content').innerText()).trim(), 'The answer is 42.');
  const reasoning = reply.locator('details.reasoning');
  assert.equal(await reasoning.isVisible(), true);
  assert.equal(await reasoning.getAttribute('open'), null, 'reasoning starts collapsed');
  assert.match(await reasoning.locator('.text').textContent(), /Pondering the question\./);

  // Markup is shown as text, never parsed.
  const markup = '<img src=x id=injected onerror="document.title=1">';
  await page.locator('#chat-input').fill(markup);
  await page.locator('#chat-send').click();
  // The history still holds the first question, so the script answers it again.
  await page.locator('.message.assistant .content', { hasText: 'The answer is 42.' }).nth(1).waitFor();
  await page.locator('#chat-send:enabled').waitFor();
  assert.equal(await page.locator('#injected').count(), 0);
  assert.equal(await page.locator('.message.user .content').last().innerText(), markup);
  await reasoning.locator('summary').click();
  await screenshot(page, 'chat');

  await page.reload();
  await page.locator('.message.assistant .content', { hasText: 'The answer is 42.' }).first().waitFor();
  assert.equal(await page.locator('.message').count(), 4);
  await page.locator('#chat-new').click();
  assert.equal(await page.locator('.message').count(), 0);

  // Stop aborts the stream; the server cancels the generation.
  await page.locator('#chat-input').fill('Write a long essay');
  await page.locator('#chat-input').press('Enter');
  await page.locator('.message.assistant .content', { hasText: 'Essay words' }).waitFor();
  await page.locator('#chat-stop').click();
  await page.locator('.message.assistant .content', { hasText: '[stopped]' }).waitFor();
  assert.equal(await page.locator('#chat-stop').isVisible(), false);
  const stopped = await page.locator('.message.assistant .content').innerText();
  assert.ok(stopped.length < 'Essay words go on. '.length * 4000, 'the reply was cut short');
  await waitFor(async () => (await http(`${open.url}/api/status`)).json.requests.active === 0, 'the request to end');
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('sign-in: a wrong key fails, the right one sets the session cookie, POSTs need the CSRF token',
  { skip: skipBrowser }, async () => {
    const page = await newPage();
    await page.goto(`${locked.url}/admin`);
    await page.locator('#sign-in-form').waitFor();
    assert.equal(await page.locator('#tabs').isVisible(), false);
    await screenshot(page, 'sign-in');

    await page.locator('#key').fill('not-the-key');
    await page.locator('#sign-in-form button').click();
    await page.locator('#sign-in-error', { hasText: 'Wrong API key.' }).waitFor();
    assert.deepEqual((await page.context().cookies()).filter((c) => c.name === 'llmhost_session'), []);
    // The browser logs the failed request itself; nothing else may be logged.
    assert.deepEqual(page.errors.filter((e) => !/status of 401/.test(e)), []);
    page.errors.length = 0;

    await page.locator('#key').fill(KEY);
    await page.locator('#sign-in-form button').click();
    await page.locator('#memory .budget[data-budget="Host"]').waitFor();
    const [cookie] = (await page.context().cookies()).filter((c) => c.name === 'llmhost_session');
    assert.ok(cookie, 'the session cookie is set');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(cookie.path, '/');
    assert.equal(cookie.secure, false, 'no TLS: no Secure');
    assert.match(cookie.value, /^[0-9a-f]{32}\.\d+\.[0-9a-f]{64}$/);

    // From the page: GETs pass on the cookie; a POST needs X-CSRF-Token.
    const results = await page.evaluate(async (model) => {
      const session = await (await fetch('/admin/api/session')).json();
      const pin = (headers) => fetch(`/admin/api/models/${model}/pin`, { method: 'POST', headers });
      return {
        session,
        status: (await fetch('/api/status')).status,
        noToken: (await pin({})).status,
        wrongToken: (await pin({ 'X-CSRF-Token': 'x'.repeat(64) })).status,
        withToken: (await pin({ 'X-CSRF-Token': session.csrf })).status,
      };
    }, MODEL);
    assert.equal(results.session.signed_in, true);
    assert.match(results.session.csrf, /^[0-9a-f]{64}$/);
    assert.equal(results.status, 200);
    assert.equal(results.noToken, 403);
    assert.equal(results.wrongToken, 403);
    assert.equal(results.withToken, 200);
    // The browser logs the two refused requests itself.
    assert.deepEqual(page.errors.filter((e) => !/status of 403/.test(e)), []);
    page.errors.length = 0;
    assert.equal((await modelStatus(locked, { authorization: `Bearer ${KEY}` })).pinned, true);
    // The cookie works only on the dashboard's API, and a forged one nowhere.
    const asCookie = { cookie: `llmhost_session=${cookie.value}` };
    assert.equal((await http(`${locked.url}/api/status`, 'GET', undefined, asCookie)).status, 200);
    assert.equal((await http(`${locked.url}/metrics`, 'GET', undefined, asCookie)).status, 401);
    const forged = { cookie: `llmhost_session=${cookie.value.replace(/\.(\d+)\./, (m, t) => `.${Number(t) + 999}.`)}` };
    assert.equal((await http(`${locked.url}/api/status`, 'GET', undefined, forged)).status, 401);
    await page.locator('#tabs button[data-tab="models"]').click();
    await page.locator(`#model-table tr[data-model="${MODEL}"]`).waitFor();
    // The Models page's PUT and POST carry the token too: a setting saves, a pull reaches the server's checks.
    await page.locator(`#model-table tr[data-model="${MODEL}"] button[data-action="settings"]`).click();
    await page.locator('#model-settings [data-field="max_tokens"]').fill('99');
    await page.locator('#settings-save').click();
    await page.locator('#settings-result', { hasText: 'Saved' }).waitFor();
    const settingsUrl = `${locked.url}/admin/api/models/${MODEL}/settings`;
    const bearer = { authorization: `Bearer ${KEY}` };
    assert.equal((await http(settingsUrl, 'GET', undefined, bearer)).json.settings.max_tokens, 99);
    await http(settingsUrl, 'PUT', { max_tokens: null }, bearer);
    await page.locator('#pull-model').fill('no-slash');
    await page.locator('#pull-start').click();
    await page.locator('#pull-result', { hasText: "Download failed: 400: 'model':" }).waitFor();
    assert.deepEqual(page.errors.filter((e) => !/status of 400/.test(e)), []);
    page.errors.length = 0;
    await page.locator('#tabs button[data-tab="chat"]').click();
    await page.locator(`#chat-model option[value="${MODEL}"]`).waitFor({ state: 'attached' });
    await page.locator('#chat-input').fill('hello');
    await page.locator('#chat-input').press('Enter');
    await page.locator('.message.assistant .content', { hasText: 'Hello from the scripted model.' }).waitFor();
    assert.deepEqual(page.errors, []);

    // Sign out: the form again, and the old cookie no longer works.
    await page.locator('#sign-out').click();
    await page.locator('#sign-in-form').waitFor();
    assert.equal((await http(`${locked.url}/api/status`, 'GET', undefined, asCookie)).status, 401);
    await page.context().close();
  });

test('models: download from the Hub with progress, a refused repo, a cancel', { skip: skipBrowser }, async () => {
  const page = await newPage();
  await page.goto(`${open.url}/admin#models`);
  await page.locator(`#model-table tr[data-model="${MODEL}"]`).waitFor();
  assert.equal(await page.locator(`#model-table tr[data-model="${PULLED}"]`).count(), 0);

  await page.locator('#pull-model').fill(PULLED);
  await page.locator('#pull-start').click();
  // Part way: the weights' row and the overall bar show some bytes, not all.
  const bar = page.locator('#pull-bar');
  const partWay = await waitFor(() => page.evaluate(() => {
    const weights = document.querySelector('#pull-files tr[data-file="model.safetensors"] progress');
    const b = document.querySelector('#pull-bar');
    return weights?.value > 0 && weights.value < weights.max && b.value < b.max &&
      document.querySelector('#pull-bytes').textContent;
  }), 'part-way progress bars');
  assert.match(partWay, /^[\d.]+ (B|KiB) of 474\.7 KiB · 6 files$/);
  await screenshot(page, 'models-download');
  assert.equal(await page.locator('#pull-cancel').isVisible(), true);
  await page.locator('#pull-result', { hasText: `Downloaded ${PULLED}` }).waitFor({ timeout: 30000 });
  assert.equal(Number(await bar.getAttribute('value')), Number(await bar.getAttribute('max')));
  const weights = page.locator('#pull-files tr[data-file="model.safetensors"]');
  assert.match(await weights.innerText(), /422\.6 KiB of 422\.6 KiB/);
  assert.equal(await page.locator('#pull-files tr').count(), 6);
  assert.match(await page.locator('#pull-result').innerText(), /^Downloaded test-org\/qwen3-tiny: 6 files\.$/);
  await page.locator(`#model-table tr[data-model="${PULLED}"]`).waitFor();
  assert.ok((await http(`${open.url}/v1/models`)).json.data.some((m) => m.id === PULLED));
  assert.equal(await page.locator('#pull-cancel').isVisible(), false);

  // A repository the Hub does not have: the server's message, as its API gives it.
  const refused = await http(`${open.url}/admin/api/models/pull`, 'POST', { model: 'test-org/missing', stream: false });
  assert.equal(refused.status, 404, refused.text);
  await page.locator('#pull-model').fill('test-org/missing');
  await page.locator('#pull-start').click();
  await page.locator('#pull-result.error').waitFor();
  assert.equal(await page.locator('#pull-result').innerText(), `Download failed: ${refused.json.error.message}`);
  // A name that is no repository is refused before any download (400).
  await page.locator('#pull-model').fill('no-slash');
  await page.locator('#pull-start').click();
  await page.locator('#pull-result', { hasText: "Download failed: 400: 'model':" }).waitFor();
  assert.deepEqual(page.errors.filter((e) => !/status of 400/.test(e)), []);
  page.errors.length = 0;

  // Cancel hangs up; the server stops the download and lists nothing new.
  await page.locator('#pull-model').fill(STUCK);
  await page.locator('#pull-start').click();
  await page.locator('#pull-files tr[data-file="model.safetensors"]').waitFor();
  await page.locator('#pull-cancel').click();
  await page.locator('#pull-result', { hasText: 'Cancelled' }).waitFor();
  assert.equal(await page.locator('#pull-start').isEnabled(), true);
  await waitFor(() => new RegExp(`pull: ${STUCK}: .*: stopped`).test(open.stderr), 'the server to cancel the pull');
  assert.equal((await http(`${open.url}/v1/models`)).json.data.some((m) => m.id === STUCK), false);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('models: alias and settings saved, kept across a reload, bad values refused', { skip: skipBrowser }, async () => {
  const page = await newPage();
  await page.goto(`${open.url}/admin#models`);
  const row = page.locator(`#model-table tr[data-model="${MODEL}"]`);
  const form = page.locator('#model-settings');
  const field = (name) => form.locator(`[data-field="${name}"]`);
  const openForm = async () => {
    await row.locator('button[data-action="settings"]').click();
    await form.waitFor();  // shown once filled
    assert.equal(await page.locator('#settings-model').innerText(), MODEL);
  };
  await openForm();
  assert.equal(await field('alias').inputValue(), '');
  await field('alias').fill('tiny-chat');
  await field('sampling.temperature').fill('0.6');
  await field('max_tokens').fill('256');
  await field('chat_template_kwargs').fill('{"enable_thinking": false}');
  await form.locator('#settings-save').click();
  await page.locator('#settings-result', { hasText: `Saved the settings of ${MODEL}.` }).waitFor();
  const saved = (await http(`${open.url}/admin/api/models/${MODEL}/settings`)).json.settings;
  assert.deepEqual(saved, { alias: 'tiny-chat', sampling: { temperature: 0.6 },
    chat_template_kwargs: { enable_thinking: false }, max_tokens: 256 });
  // Clients see the alias; the table shows it beside the id.
  const ids = (await http(`${open.url}/v1/models`)).json.data.map((m) => m.id);
  assert.ok(ids.includes('tiny-chat') && !ids.includes(MODEL), ids.join(', '));
  await row.locator('td', { hasText: `tiny-chat (${MODEL})` }).waitFor();

  await page.reload();
  await openForm();
  assert.equal(await field('alias').inputValue(), 'tiny-chat');
  assert.equal(await field('sampling.temperature').inputValue(), '0.6');
  assert.equal(await field('max_tokens').inputValue(), '256');
  assert.equal(await field('sampling.top_p').inputValue(), '');
  assert.equal(await field('ttl_seconds').inputValue(), '');
  assert.deepEqual(JSON.parse(await field('chat_template_kwargs').inputValue()), { enable_thinking: false });
  await screenshot(page, 'models');

  // Values the server refuses: its message, the field marked, nothing changed.
  for (const [name, text, patch] of [
    ['sampling.temperature', '500', { sampling: { temperature: 500 } }],
    ['max_tokens', 'lots', { max_tokens: 'lots' }],
  ]) {
    const refused = await http(`${open.url}/admin/api/models/${MODEL}/settings`, 'PUT', patch);
    assert.equal(refused.status, 400, refused.text);
    await field(name).fill(text);
    await form.locator('#settings-save').click();
    await page.locator('#settings-result.error', { hasText: refused.json.error.message }).waitFor();
    assert.equal(await page.locator('#settings-result').innerText(), `Not saved: 400: ${refused.json.error.message}`);
    assert.equal(await field(name).getAttribute('aria-invalid'), 'true');
    assert.equal(await field('alias').getAttribute('aria-invalid'), 'false');
    if (name === 'max_tokens') await screenshot(page, 'models-settings-error');
    await field(name).fill(name === 'max_tokens' ? '256' : '0.6');
  }
  // Kwargs that are no JSON cannot be sent at all: said in the page, nothing sent.
  await field('chat_template_kwargs').fill('{"enable_thinking": fals');
  await form.locator('#settings-save').click();
  await page.locator('#settings-result.error', { hasText: 'chat_template_kwargs: not valid JSON' }).waitFor();
  assert.equal(await field('chat_template_kwargs').getAttribute('aria-invalid'), 'true');
  assert.deepEqual((await http(`${open.url}/admin/api/models/${MODEL}/settings`)).json.settings, saved);
  assert.deepEqual(page.errors.filter((e) => !/status of 400/.test(e)), []);

  // Emptied fields go back to the server's defaults.
  for (const name of ['alias', 'sampling.temperature', 'max_tokens', 'chat_template_kwargs']) await field(name).fill('');
  await form.locator('#settings-save').click();
  await page.locator('#settings-result:not(.error)', { hasText: 'Saved' }).waitFor();
  assert.deepEqual((await http(`${open.url}/admin/api/models/${MODEL}/settings`)).json.settings, {});
  await row.locator('td', { hasText: /^scripted$/ }).waitFor();
  await page.context().close();
});
