// Status page: the requests each loaded model holds now (the status JSON's
// per-model `requests`), with the prompt's prefill progress and decode speed.
import { $, el, formatCount } from './dom.js';

const seconds = (v) => (v >= 10 ? `${v.toFixed(0)} s` : v >= 1 ? `${v.toFixed(1)} s` : `${Math.round(v * 1000)} ms`);

function row(model, r) {
  const total = Math.max(r.prompt_tokens, 1);
  const prefill = el('td', { class: 'prefill' },
    el('progress', { max: total, value: Math.min(r.prompt_done, total) }),
    ` ${formatCount(r.prompt_done)} / ${formatCount(r.prompt_tokens)}`);
  return el('tr', { 'data-request': String(r.id), 'data-state': r.state },
    el('td', {}, model), el('td', { class: 'mono' }, r.request_id || `#${r.id}`),
    el('td', {}, r.state), prefill,
    el('td', { class: 'num' }, formatCount(r.generated_tokens)),
    el('td', { class: 'num' }, r.ttft_s == null ? '–' : r.tokens_per_s.toFixed(1)),
    el('td', { class: 'num' }, seconds(r.age_s)),
    el('td', { class: 'num' }, r.ttft_s == null ? '–' : seconds(r.ttft_s)));
}

// `models`: the status JSON's models (those loaded carry `requests`).
export function renderLiveRequests(models) {
  const rows = [];
  let leftOut = 0;
  for (const m of models) {
    const list = m.requests || [];
    leftOut += Math.max(0, (m.requests_total || 0) - list.length);
    for (const r of list) rows.push(row(m.alias || m.id, r));
  }
  const body = $('#live-requests tbody');
  if (!rows.length) {
    body.replaceChildren(el('tr', {}, el('td', { colSpan: 8, class: 'empty' }, 'No request in progress')));
  } else {
    body.replaceChildren(...rows);
  }
  $('#live-requests-note').textContent = leftOut ? `${formatCount(leftOut)} more not listed` : '';
}
