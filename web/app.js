// The dashboard's entry: sign-in (when the server has API keys), then tabs.
import { api, setCsrf, whenSignedOut } from './client.js';
import { $ } from './dom.js';
import { showStatus, stopStatus } from './status.js';
import { refreshModels, setUpModels } from './models.js';
import { setUpChat, showChat } from './chat.js';
import { setUpLogs, showLogs, stopLogs } from './logs.js';
import { setUpBench, showBench, stopBench } from './bench.js';

const pages = { status: showStatus, models: refreshModels, chat: showChat, logs: showLogs, bench: showBench };

// Stops what the shown page polls or streams.
function stopPages() {
  stopStatus();
  stopLogs();
  stopBench();
}

function showTab(name) {
  if (!pages[name]) name = 'status';
  stopPages();
  for (const section of document.querySelectorAll('[data-page]')) section.hidden = section.id !== name;
  for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('active', b.dataset.tab === name);
  if (location.hash !== `#${name}`) history.replaceState(null, '', `#${name}`);
  pages[name]();
}

function showSignIn() {
  stopPages();
  setCsrf('');
  for (const section of document.querySelectorAll('[data-page]')) section.hidden = true;
  $('#tabs').hidden = true;
  $('#sign-out').hidden = true;
  $('#sign-in').hidden = false;
  $('#key').focus();
}

function showApp(session) {
  setCsrf(session.csrf);
  $('#sign-in').hidden = true;
  $('#tabs').hidden = false;
  $('#sign-out').hidden = session.auth === 'open';
  showTab(location.hash.slice(1));
}

async function signIn(ev) {
  ev.preventDefault();
  const error = $('#sign-in-error');
  error.textContent = '';
  try {
    const session = await api('/admin/login', { method: 'POST', body: { key: $('#key').value } });
    $('#key').value = '';
    showApp(session);
  } catch (e) {
    error.textContent = e.status === 401 ? 'Wrong API key.' : e.message;
  }
}

async function signOut() {
  try {
    await api('/admin/logout', { method: 'POST' });
  } finally {
    showSignIn();
  }
}

async function start() {
  for (const b of document.querySelectorAll('#tabs button')) b.addEventListener('click', () => showTab(b.dataset.tab));
  $('#sign-in-form').addEventListener('submit', signIn);
  $('#sign-out').addEventListener('click', signOut);
  window.addEventListener('hashchange', () => { if (!$('#tabs').hidden) showTab(location.hash.slice(1)); });
  setUpModels();
  setUpChat();
  setUpLogs();
  setUpBench();
  whenSignedOut(showSignIn);
  const session = await api('/admin/api/session');
  if (session.auth === 'open' || session.signed_in) showApp(session);
  else showSignIn();
}

start();
