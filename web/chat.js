// Chat: streams POST /v1/chat/completions (SSE); content and reasoning are
// shown as text, reasoning apart (collapsed). The conversation is kept in
// localStorage.
import { api, errorMessage, request } from './client.js';
import { $, el } from './dom.js';

const kStoreKey = 'llmhost.chat';
let conversation = load();
let controller = null;

function load() {
  try {
    const c = JSON.parse(localStorage.getItem(kStoreKey));
    if (c && Array.isArray(c.messages)) return c;
  } catch { /* none kept, or unreadable */ }
  return { model: '', messages: [] };
}

function save() { localStorage.setItem(kStoreKey, JSON.stringify(conversation)); }

function messageView(m) {
  const view = el('div', { class: `message ${m.role}` }, el('div', { class: 'role' }, m.role));
  if (m.role === 'assistant') {
    const reasoning = el('details', { class: 'reasoning' }, el('summary', {}, 'Reasoning'), el('div', { class: 'text' }));
    reasoning.hidden = !m.reasoning;
    reasoning.lastChild.textContent = m.reasoning || '';
    view.append(reasoning);
  }
  view.append(el('div', { class: 'content' }, m.content));
  return view;
}

function renderLog() {
  $('#chat-log').replaceChildren(...conversation.messages.map(messageView));
}

function setBusy(busy) {
  $('#chat-send').disabled = busy;
  $('#chat-stop').hidden = !busy;
}

// Server-sent events from a fetch body: calls onData for each `data:` line.
async function readEvents(body, onData) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line.startsWith('data: ')) onData(line.slice(6));
    }
  }
}

async function send(text) {
  const model = $('#chat-model').value;
  conversation.model = model;
  conversation.messages.push({ role: 'user', content: text });
  const reply = { role: 'assistant', content: '', reasoning: '' };
  conversation.messages.push(reply);
  save();
  renderLog();
  const view = $('#chat-log').lastChild;
  const contentView = view.querySelector('.content');
  const reasoningView = view.querySelector('.reasoning');
  $('#chat-error').textContent = '';
  controller = new AbortController();
  setBusy(true);
  try {
    const messages = conversation.messages.slice(0, -1).map(({ role, content }) => ({ role, content }));
    const res = await request('/v1/chat/completions', {
      method: 'POST', signal: controller.signal, body: { model, messages, stream: true },
    });
    if (!res.ok) {
      let body = null;
      try { body = await res.json(); } catch { /* not JSON */ }
      throw new Error(errorMessage(res.status, body));
    }
    await readEvents(res.body, (data) => {
      if (data === '[DONE]') return;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message || 'generation failed');
      const delta = (chunk.choices && chunk.choices[0] && chunk.choices[0].delta) || {};
      if (delta.reasoning_content) {
        reply.reasoning += delta.reasoning_content;
        reasoningView.hidden = false;
        reasoningView.lastChild.textContent = reply.reasoning;
      }
      if (delta.content) {
        reply.content += delta.content;
        contentView.textContent = reply.content;
      }
    });
  } catch (e) {
    if (e.name !== 'AbortError') $('#chat-error').textContent = e.message;
    else reply.content += ' [stopped]';
    contentView.textContent = reply.content;
  } finally {
    controller = null;
    setBusy(false);
    save();
  }
}

export async function showChat() {
  try {
    const r = await api('/v1/models');
    const select = $('#chat-model');
    const chosen = select.value || conversation.model;
    // Embedding and rerank models cannot chat.
    const models = r.data.filter((m) => (m.kind ?? 'chat') === 'chat');
    select.replaceChildren(...models.map((m) => el('option', { value: m.id }, m.id)));
    if (models.some((m) => m.id === chosen)) select.value = chosen;
  } catch (e) {
    $('#chat-error').textContent = `Models: ${e.message}`;
  }
  renderLog();
}

export function setUpChat() {
  $('#chat-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = $('#chat-input');
    const text = input.value.trim();
    if (!text || controller) return;
    input.value = '';
    send(text);
  });
  $('#chat-input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) {
      ev.preventDefault();
      $('#chat-form').requestSubmit();
    }
  });
  $('#chat-stop').addEventListener('click', () => controller && controller.abort());
  $('#chat-new').addEventListener('click', () => {
    if (controller) controller.abort();
    conversation = { model: $('#chat-model').value, messages: [] };
    save();
    renderLog();
  });
}
