// The web dashboard (/admin) in Debian's Chromium, driven by playwright-core
// (which never downloads a browser): every page loads without console
// errors, Status shows the memory bars, the loaded model and the last hour's
// charts (sampled every second here: --stats-interval 1), Models unloads,
// loads, pins and sets the TTL, Logs tails the server's log with a level
// filter, Chat streams the scripted model's reply with its reasoning
// apart, sign-in with an API key sets the session cookie and POSTs need the
// CSRF token. Screenshots of every page go to $LLMHOST_SCREENSHOT_DIR (or a
// new temporary folder; the path is printed). Skipped without /usr/bin/chromium
// (apt install chromium) or playwright-core (npm ci).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startScriptedServer, http, waitFor } from './harness.mjs';

const CHROMIUM = process.env.LLMHOST_CHROMIUM || '/usr/bin/chromium';
let chromium = null;
try {
  ({ chromium } = await import('playwright-core'));
} catch { /* not installed: the browser tests skip */ }
const skipBrowser = !existsSync(CHROMIUM) ? `${CHROMIUM} is absent (apt install chromium)`
  : !chromium ? 'playwright-core is not installed (npm ci in tests/integration)' : false;

const MODEL = 'scripted';
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

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-dashboard-'));
  mkdirSync(path.join(dir, 'open'));
  mkdirSync(path.join(dir, 'locked'));
  // Info lines for the Logs page; a sample a second for the charts.
  open = await startScriptedServer(path.join(dir, 'open'), MODEL, SCRIPT, ['--stats-interval', '1'],
    { LLMHOST_LOG_LEVEL: 'info' });
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
  await screenshot(page, 'status');
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('models: unload and load a model from the table', { skip: skipBrowser }, async () => {
  await http(`${open.url}/admin/api/models/${MODEL}/load`, 'POST');
  const page = await newPage();
  await page.goto(`${open.url}/admin#models`);
  const row = page.locator(`#model-table tr[data-model="${MODEL}"]`);
  await row.locator('.state', { hasText: /^loaded$/ }).waitFor();
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
  await screenshot(page, 'models');
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
