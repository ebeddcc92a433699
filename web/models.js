// Models: every discovered model (GET /v1/models/status) with load / unload /
// pin / unpin (POST /admin/api/models/{id}/...), its idle TTL
// (PUT /admin/api/models/{id}/settings {"ttl_seconds"}; empty: the server's
// --idle-ttl) and a Settings button for the rest (model_settings.js); below,
// the download from the Hub (pull.js).
import { api, modelPath } from './client.js';
import { $, el, formatBytes } from './dom.js';
import { openSettings, setUpSettings } from './model_settings.js';
import { setUpPull } from './pull.js';

function stateOf(m) {
  if (m.loading) return 'loading';
  return m.loaded ? 'loaded' : 'not loaded';
}

async function act(id, action, request = { method: 'POST' }) {
  const out = $('#models-result');
  out.className = '';
  out.textContent = `${action} ${id}…`;
  try {
    const r = await api(modelPath(id, action === 'ttl' ? 'settings' : action), request);
    out.textContent = `${action} ${id}: ${r.status || 'ok'}`;
  } catch (e) {
    out.className = 'error';
    out.textContent = `${action} ${id} failed: ${e.message}`;
  }
  await refreshModels();
}

function row(m) {
  const button = (action, label, enabled) => {
    const b = el('button', { type: 'button', class: 'small', disabled: !enabled, 'data-action': action }, label);
    b.addEventListener('click', () => act(m.id, action));
    return b;
  };
  const ttl = el('input', { type: 'number', min: 1, class: 'ttl', placeholder: 'never', title: 'idle seconds before unloading',
    value: m.ttl_seconds ?? '' });
  const setTtl = el('button', { type: 'button', class: 'small', 'data-action': 'ttl' }, 'Set');
  setTtl.addEventListener('click', () => act(m.id, 'ttl',
    { method: 'PUT', body: { ttl_seconds: ttl.value === '' ? null : Number(ttl.value) } }));
  const settings = el('button', { type: 'button', class: 'small quiet', 'data-action': 'settings' }, 'Settings');
  settings.addEventListener('click', () => openSettings(m.id));
  return el('tr', { 'data-model': m.id },
    el('td', {}, m.alias ? `${m.alias} (${m.id})` : m.id,
      m.kind !== 'chat' ? el('span', { class: 'kind', title: `serves ${m.kind === 'rerank' ? '/v1/rerank' : '/v1/embeddings'}` }, m.kind) : ''),
    el('td', { class: `state ${m.loaded ? 'on' : ''}` }, stateOf(m)),
    el('td', { class: 'num' }, m.loaded ? formatBytes(m.memory_bytes) : `~${formatBytes(m.estimated_bytes)}`),
    el('td', { class: 'ttl-cell' }, ttl, ' s ', setTtl),
    el('td', {}, m.pinned ? 'yes' : 'no'),
    el('td', { class: 'actions' },
      button('load', 'Load', !m.loaded && !m.loading), button('unload', 'Unload', m.loaded),
      m.pinned ? button('unpin', 'Unpin', true) : button('pin', 'Pin', true), settings));
}

export async function refreshModels() {
  try {
    const r = await api('/v1/models/status');
    const body = $('#model-table tbody');
    if (!r.models.length) {
      body.replaceChildren(el('tr', {}, el('td', { colSpan: 6, class: 'empty' }, 'No models found under --model-dir')));
    } else {
      body.replaceChildren(...r.models.map(row));
    }
  } catch (e) {
    $('#models-result').className = 'error';
    $('#models-result').textContent = `Models: ${e.message}`;
  }
}

export function setUpModels() {
  setUpSettings(refreshModels);
  setUpPull(refreshModels);
}
