// Logs: a live tail of the server's log (GET /admin/api/logs, SSE) while the
// page is shown, filtered by level on the server; the newest lines are kept.
import { $, el } from './dom.js';

const kMaxLines = 1000;
let source = null;

function append(node) {
  const view = $('#log-lines');
  const atBottom = view.scrollTop + view.clientHeight >= view.scrollHeight - 4;
  view.append(node);
  while (view.childElementCount > kMaxLines) view.firstElementChild.remove();
  if (atBottom) view.scrollTop = view.scrollHeight;
}

function connect() {
  stopLogs();
  $('#log-lines').replaceChildren();
  $('#logs-state').textContent = 'connecting…';
  source = new EventSource(`/admin/api/logs?level=${encodeURIComponent($('#log-level').value)}`);
  source.addEventListener('open', () => { $('#logs-state').textContent = 'live'; });
  source.addEventListener('log', (ev) => {
    const r = JSON.parse(ev.data);
    append(el('div', { class: `log-line level-${r.level}`, 'data-level': r.level }, r.line));
  });
  source.addEventListener('missed', (ev) => {
    append(el('div', { class: 'log-line missed' }, `… ${JSON.parse(ev.data).lines} lines not shown (too far behind)`));
  });
  // EventSource reconnects by itself; say so meanwhile.
  source.addEventListener('error', () => { $('#logs-state').textContent = 'reconnecting…'; });
}

export function setUpLogs() {
  $('#log-level').addEventListener('change', connect);
  $('#log-clear').addEventListener('click', () => $('#log-lines').replaceChildren());
}

export function showLogs() { connect(); }

export function stopLogs() {
  if (source) source.close();
  source = null;
}
