// Status: GET /api/status and /admin/api/history (the charts) every 2 s
// while the page is shown.
import { api } from './client.js';
import { lineChart } from './charts.js';
import { $, el, fillList, formatBytes, formatCount } from './dom.js';
import { renderLiveRequests } from './live_requests.js';

const kPollMs = 2000;
let timer = null;

// One budget (host, or a GPU) as a bar: usage and committed as fills, the
// soft and hard watermarks and the admission ceiling as marks.
function budgetBar(name, b) {
  const marks = [['soft', b.soft_bytes], ['hard', b.hard_bytes], ['ceiling', b.ceiling_bytes]];
  const scale = Math.max(b.usage_bytes, b.committed_bytes, ...marks.map(([, v]) => v || 0), 1) * 1.05;
  const pct = (v) => `${Math.min(100, (100 * (v || 0)) / scale).toFixed(2)}%`;
  const bar = el('div', { class: 'bar', title: `${name}: usage ${formatBytes(b.usage_bytes)}` });
  const committed = el('div', { class: 'fill committed' });
  committed.style.width = pct(b.committed_bytes);
  const usage = el('div', { class: 'fill usage' });
  usage.style.width = pct(b.usage_bytes);
  bar.append(committed, usage);
  for (const [kind, v] of marks) {
    if (!v) continue;
    const m = el('div', { class: `mark ${kind}`, title: `${kind} ${formatBytes(v)}` });
    m.style.left = pct(v);
    bar.append(m);
  }
  const figures = el('div', { class: 'figures' },
    `usage ${formatBytes(b.usage_bytes)} · committed ${formatBytes(b.committed_bytes)} · soft ${formatBytes(b.soft_bytes)}`
    + ` · hard ${formatBytes(b.hard_bytes)} · ceiling ${formatBytes(b.ceiling_bytes)}`);
  return el('div', { class: 'budget', 'data-budget': name },
    el('div', { class: 'budget-head' }, el('strong', {}, name), ' ',
      el('span', { class: `level level-${b.level}` }, b.level || '')),
    bar, figures);
}

function render(s) {
  const m = s.memory || {};
  const budgets = [budgetBar('Host', m)];
  for (const d of m.devices || []) budgets.push(budgetBar(`GPU ${d.gpu}`, d));
  $('#memory').replaceChildren(...budgets);

  const r = s.requests || {};
  fillList($('#requests'), [['Active', formatCount(r.active)], ['Waiting', formatCount(r.waiting)],
    ['Waiting for memory', formatCount(r.memory_blocked)],
    ['Generating (HTTP)', formatCount(s.http && s.http.generations_active)]]);
  const t = s.totals || {};
  fillList($('#totals'), [['Generations', formatCount(t.generations)], ['Prompt', formatCount(t.prompt_tokens)],
    ['Cached', formatCount(t.cached_tokens)], ['Generated', formatCount(t.completion_tokens)]]);
  const c = s.cache || {};
  const rows = [['Mode', c.mode || 'off']];
  if (c.hot) {
    rows.push(['Hot (RAM)', `${formatBytes(c.hot.bytes)} of ${formatBytes(c.hot.max_bytes)} · ${formatCount(c.hot.hits)} hits`],
      ['SSD', `${formatBytes(c.ssd.bytes)} of ${formatBytes(c.ssd.effective_max_bytes)} · ${formatCount(c.ssd.hits)} hits`],
      ['Lookups', `${formatCount(c.hits)} hits · ${formatCount(c.misses)} misses`]);
  }
  fillList($('#cache'), rows);

  const loaded = (s.models || []).filter((x) => x.loaded);
  const body = $('#loaded-models tbody');
  if (!loaded.length) {
    body.replaceChildren(el('tr', {}, el('td', { colSpan: 6, class: 'empty' }, 'No model loaded')));
  } else {
    body.replaceChildren(...loaded.map((x) => el('tr', { 'data-model': x.id },
      el('td', {}, x.alias || x.id), el('td', { class: 'num' }, formatBytes(x.memory_bytes)),
      el('td', { class: 'num' }, formatBytes(x.kv_cache_bytes)), el('td', { class: 'num' }, formatCount(x.running)),
      el('td', { class: 'num' }, formatCount(x.waiting)), el('td', { class: 'num' }, formatCount(x.generated_tokens)))));
  }
  renderLiveRequests(loaded);
}

const rate = (v) => (v >= 1000 ? `${(v / 1000).toFixed(1)}k` : v.toFixed(v >= 10 ? 0 : 1));
const ms = (v) => (v >= 1 ? `${v.toFixed(1)} s` : `${Math.round(v * 1000)} ms`);

function renderCharts(h) {
  const samples = h.samples || [];
  const at = (f) => samples.map((x) => [x.time_ms, f(x)]);
  const budgets = [...new Set(samples.flatMap((x) => x.memory.map((b) => b.name)))];
  $('#charts').replaceChildren(
    lineChart({ id: 'throughput', title: 'Throughput (tokens/s)', format: rate, series: [
      { name: 'generated', points: at((x) => x.generated_tps) },
      { name: 'prompt', points: at((x) => x.prompt_tps) }] }),
    lineChart({ id: 'ttft', title: 'Time to first token (mean)', format: ms, series: [
      { name: 'TTFT', points: at((x) => x.ttft_mean_s) }] }),
    lineChart({ id: 'memory', title: 'Memory usage', format: formatBytes, series: budgets.map((name) => ({
      name, points: at((x) => (x.memory.find((b) => b.name === name) || {}).usage_bytes ?? null) })) }));
  $('#charts-note').textContent = samples.length
    ? `${samples.length} samples, one every ${h.interval_s} s (the last hour)`
    : `The first sample comes ${h.interval_s} s after the server starts.`;
}

async function poll() {
  try {
    const [status, history] = await Promise.all([api('/api/status'), api('/admin/api/history')]);
    render(status);
    renderCharts(history);
    $('#status-error').textContent = '';
  } catch (e) {
    $('#status-error').textContent = `Status: ${e.message}`;
  }
}

export function showStatus() {
  stopStatus();
  poll();
  timer = setInterval(poll, kPollMs);
}

export function stopStatus() {
  if (timer) clearInterval(timer);
  timer = null;
}
