// Bench: runs llmhost's measurements (prefill, cached-prefix TTFT, decode,
// a concurrency sweep) against a chosen model in the server
// (POST /admin/api/bench), follows the run (GET /admin/api/bench/{id}, twice
// a second) and lists the kept results (GET /admin/api/bench), each deletable
// (DELETE /admin/api/bench/{id}).
import { api } from './client.js';
import { $, el } from './dom.js';

let timer = null;  // the poll of the run in progress
let shown = false;  // the page is shown: polls go on

const fixed = (v, digits = 1) => Number(v || 0).toFixed(digits);
const encodeId = (id) => encodeURIComponent(id);

function sweepText(levels) {
  return levels.map((l) => `×${l.concurrency}: ${fixed(l.tokens_per_s)} tok/s, ${fixed(l.mean_ttft_ms)} ms`).join(' · ');
}

function resultRow(record) {
  const r = record.result;
  const remove = el('button', { type: 'button', class: 'small', 'data-action': 'delete' }, 'Delete');
  remove.addEventListener('click', () => removeResult(record.id));
  return el('tr', { 'data-bench': record.id },
    el('td', {}, new Date(record.created * 1000).toLocaleString()),
    el('td', {}, record.model),
    el('td', { class: 'num' }, r.prefill.prompt_tokens),
    el('td', { class: 'num', 'data-field': 'prefill' }, fixed(r.prefill.tokens_per_s)),
    el('td', { class: 'num', 'data-field': 'cached' },
      `${fixed(r.cached_prefix.ttft_ms)} (${r.cached_prefix.cached_tokens}/${r.cached_prefix.prompt_tokens} cached)`),
    el('td', { class: 'num', 'data-field': 'decode' }, fixed(r.decode.tokens_per_s)),
    el('td', { class: 'sweep', 'data-field': 'sweep' }, sweepText(r.concurrency)),
    el('td', {}, remove));
}

function showResults(results) {
  const body = $('#bench-results tbody');
  if (!results.length) {
    body.replaceChildren(el('tr', {}, el('td', { colSpan: 8, class: 'empty' }, 'No results yet: run one above')));
  } else {
    body.replaceChildren(...results.map(resultRow));
  }
}

function setRunning(run) {
  $('#bench-run').disabled = !!run;
  $('#bench-progress').hidden = !run;
  if (!run) return;
  $('#bench-bar').max = Math.max(run.steps, 1);
  $('#bench-bar').value = run.step;
  $('#bench-phase').textContent = `${run.model}: ${run.phase}` + (run.steps ? ` (${run.step}/${run.steps})` : '');
}

async function refresh() {
  const state = await api('/admin/api/bench');
  showResults(state.results);
  setRunning(state.running);
  if (state.running) follow(state.running.id);
}

// Polls run `id` until it ends, then lists the results again.
function follow(id) {
  clearTimeout(timer);
  timer = setTimeout(async () => {
    timer = null;
    try {
      const run = await api(`/admin/api/bench/${encodeId(id)}`);
      if (!shown) return;
      if (run.status === 'running') {
        setRunning(run);
        follow(id);
        return;
      }
      if (run.status === 'failed') $('#bench-error').textContent = `Bench ${id} failed: ${run.error}`;
      await refresh();
    } catch (e) {
      $('#bench-error').textContent = `Bench: ${e.message}`;
      setRunning(null);
    }
  }, 500);
}

async function start(ev) {
  ev.preventDefault();
  $('#bench-error').textContent = '';
  const concurrency = $('#bench-concurrency').value.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  try {
    const run = await api('/admin/api/bench', { method: 'POST', body: {
      model: $('#bench-model').value,
      prompt_tokens: Number($('#bench-prompt').value),
      max_tokens: Number($('#bench-max').value),
      concurrency,
    } });
    setRunning({ ...run, phase: 'starting', step: 0, steps: 0 });
    follow(run.id);
  } catch (e) {
    $('#bench-error').textContent = e.message;
  }
}

async function removeResult(id) {
  try {
    await api(`/admin/api/bench/${encodeId(id)}`, { method: 'DELETE' });
    await refresh();
  } catch (e) {
    $('#bench-error').textContent = e.message;
  }
}

async function fillModels() {
  const select = $('#bench-model');
  const chosen = select.value;
  const r = await api('/v1/models/status');
  const models = r.models.filter((m) => m.kind === 'chat');  // Bench measures generation
  select.replaceChildren(...models.map((m) => el('option', { value: m.id }, m.loaded ? `${m.id} (loaded)` : m.id)));
  if (models.some((m) => m.id === chosen)) select.value = chosen;
}

export function setUpBench() {
  $('#bench-form').addEventListener('submit', start);
}

export async function showBench() {
  shown = true;
  try {
    await fillModels();
    await refresh();
  } catch (e) {
    $('#bench-error').textContent = `Bench: ${e.message}`;
  }
}

export function stopBench() {
  shown = false;
  clearTimeout(timer);
  timer = null;
}
