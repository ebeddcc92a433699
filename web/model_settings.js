// One model's alias and settings (pool/model_settings.h): read with
// GET /admin/api/models/{id}/settings, saved with PUT .../settings. The form
// sends every field it shows, an empty one as null (the server's default);
// the server validates, and its message (naming the field) is shown beside
// the form, the field marked. "pinned" stays with the table's Pin button.
import { api, ApiError, modelPath } from './client.js';
import { $, el } from './dom.js';

// [field (sampling.x: inside "sampling"), label, kind, placeholder (what empty means), hint]
const SAMPLING = (key, label) => [`sampling.${key}`, label, 'number', 'default', "empty: the model's default"];
const FIELDS = [
  ['alias', 'Alias', 'text', 'none', 'a name clients may send instead of the id'],
  ['ttl_seconds', 'Idle TTL (s)', 'number', '--idle-ttl', "seconds idle before unloading; empty: the server's --idle-ttl"],
  ['max_tokens', 'Max tokens', 'number', 'none', 'the cap when a request sets none'],
  ['max_context_window', 'Context window', 'number', "model's", "tokens; empty: the model's own"],
  SAMPLING('temperature', 'Temperature'),
  SAMPLING('top_p', 'Top p'),
  SAMPLING('top_k', 'Top k'),
  SAMPLING('min_p', 'Min p'),
  SAMPLING('repetition_penalty', 'Repetition penalty'),
  SAMPLING('presence_penalty', 'Presence penalty'),
  SAMPLING('frequency_penalty', 'Frequency penalty'),
  ['device', 'Device', 'text', '--device', "cpu, cuda or cuda:N; empty: the server's --device"],
  ['tool_parser', 'Tool parser', 'text', 'auto', 'hermes, qwen3_coder, ..., none; empty: chosen from the chat template'],
  ['model_type_override', 'Model type', 'text', 'config.json', "an architecture name; empty: config.json's"],
  ['chat_template_kwargs', 'Chat template kwargs', 'json', '{"enable_thinking": false}', 'a JSON object'],
  ['default', 'Default model', 'bool', '', 'used when a request names no model'],
  ['hidden', 'Hidden', 'bool', '', 'left out of /v1/models (still served)'],
];

let editing = '';  // the model whose settings the form shows
let onSaved = async () => {};

const input = (field) => $(`#settings-fields [data-field="${field}"]`);

function valueIn(settings, field) {
  const [head, tail] = field.split('.');
  return tail ? settings[head]?.[tail] : settings[head];
}

function fill(settings) {
  for (const [field, , kind] of FIELDS) {
    const v = valueIn(settings, field);
    if (kind === 'bool') input(field).checked = Boolean(v);
    else if (kind === 'json') input(field).value = v && Object.keys(v).length ? JSON.stringify(v) : '';
    else input(field).value = v ?? '';
  }
}

// Numbers go as numbers; text that is no number goes as typed, for the server to refuse by name.
function read(field, kind) {
  const node = input(field);
  if (kind === 'bool') return node.checked;
  const text = node.value.trim();
  if (text === '') return null;
  if (kind === 'number') return Number.isFinite(Number(text)) ? Number(text) : text;
  if (kind === 'json') {
    try {
      return JSON.parse(text);
    } catch {
      throw new ApiError(0, `${field}: not valid JSON (nothing was sent)`, field);
    }
  }
  return text;
}

function patchFromForm() {
  const patch = { sampling: {} };
  for (const [field, , kind] of FIELDS) {
    const [head, tail] = field.split('.');
    if (tail) patch[head][tail] = read(field, kind);
    else patch[head] = read(field, kind);
  }
  return patch;
}

// `field`: the one the server named as wrong, marked in the form.
function showResult(text, { error = false, field = '' } = {}) {
  const out = $('#settings-result');
  out.className = error ? 'error' : '';
  out.textContent = text;
  for (const node of document.querySelectorAll('#settings-fields [data-field]')) {
    const bad = node.dataset.field === field;
    node.classList.toggle('invalid', bad);
    node.setAttribute('aria-invalid', String(bad));
  }
}

async function save(ev) {
  ev.preventDefault();
  try {
    const r = await api(modelPath(editing, 'settings'), { method: 'PUT', body: patchFromForm() });
    fill(r.settings);
    showResult(`Saved the settings of ${editing}.`);
    await onSaved();
  } catch (e) {
    showResult(`Not saved: ${e.message}`, { error: true, field: e.param });
  }
}

// Shows the form for model `id` once filled from the server (hidden until then).
export async function openSettings(id) {
  const form = $('#model-settings');
  form.hidden = true;
  editing = id;
  try {
    fill((await api(modelPath(id, 'settings'))).settings);
  } catch (e) {
    $('#models-result').className = 'error';
    $('#models-result').textContent = `Settings of ${id}: ${e.message}`;
    return;
  }
  $('#settings-model').textContent = id;
  showResult('');
  form.hidden = false;
}

function field([name, label, kind, placeholder, hint]) {
  const attrs = { name, title: hint, 'data-field': name };
  const control = kind === 'bool' ? el('input', { ...attrs, type: 'checkbox' })
    : kind === 'json' ? el('textarea', { ...attrs, rows: 1, placeholder })
      : el('input', { ...attrs, type: 'text', inputMode: kind === 'number' ? 'decimal' : 'text', placeholder });
  return el('label', { class: `setting ${kind}`, title: hint }, el('span', {}, label), control);
}

// `saved`: called after a save (the table shows the alias and TTL).
export function setUpSettings(saved) {
  onSaved = saved;
  $('#settings-fields').replaceChildren(...FIELDS.map(field));
  $('#model-settings').addEventListener('submit', save);
  $('#settings-close').addEventListener('click', () => { $('#model-settings').hidden = true; editing = ''; });
}
