// Download from the Hugging Face Hub: POST /admin/api/models/pull {"model"}
// answers with NDJSON progress lines (server/routes_pull.cpp):
//   {"status":"pulling manifest","files","total"}   the chosen files and their bytes
//   {"status":"pulling FILE","total","completed"}   one file's bytes so far
//   {"status":"retrying FILE","message"}            a network error, resumed
//   {"status":"success","model","files","downloaded"} or {"error"}
// A bad request is refused before the stream (an API error body). Cancel hangs
// up: the server stops the download then (the partial files stay, so the next
// pull resumes).
import { request, errorMessage } from './client.js';
import { $, el, formatBytes } from './dom.js';

let controller = null;

function say(text, isError = false) {
  $('#pull-result').className = isError ? 'error' : '';
  $('#pull-result').textContent = text;
}

// What the progress lines told so far, drawn as an overall bar and one row per file.
class Progress {
  constructor() {
    this.total = 0;
    this.files = new Map();  // file -> {completed, total}
    this.note = '';
  }

  apply(line) {
    if (line.status === 'pulling manifest') {
      this.total = line.total || 0;
      this.note = `${line.files} files`;
    } else if (line.status?.startsWith('pulling ')) {
      this.files.set(line.status.slice(8), { completed: line.completed || 0, total: line.total || 0 });
    } else if (line.status?.startsWith('retrying ')) {
      this.note = `${line.status}: ${line.message}`;
    } else if (line.status === 'success') {
      this.note = 'done';
    } else if (line.status) {
      this.note = line.status;
    }
  }

  draw() {
    let done = 0;
    for (const f of this.files.values()) done += f.completed;
    const bar = $('#pull-bar');
    bar.max = this.total || 1;
    bar.value = Math.min(done, bar.max);
    $('#pull-bytes').textContent = `${formatBytes(done)} of ${formatBytes(this.total)}` +
      (this.note ? ` · ${this.note}` : '');
    $('#pull-files tbody').replaceChildren(...[...this.files].map(([file, f]) =>
      el('tr', { 'data-file': file },
        el('td', {}, file),
        el('td', {}, el('progress', { max: f.total || 1, value: Math.min(f.completed, f.total || 1) })),
        el('td', { class: 'num' }, `${formatBytes(f.completed)} of ${formatBytes(f.total)}`))));
  }
}

function setRunning(running) {
  $('#pull-start').disabled = running;
  $('#pull-model').disabled = running;
  $('#pull-cancel').hidden = !running;
}

// The NDJSON body, line by line, into `onLine`; the last line's object.
async function readLines(res, onLine) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  let last = null;
  for (;;) {
    const { value, done } = await reader.read();
    buffered += decoder.decode(value, { stream: !done });
    const lines = buffered.split('\n');
    buffered = done ? '' : lines.pop();
    for (const text of lines) {
      if (!text.trim()) continue;
      last = JSON.parse(text);
      onLine(last);
    }
    if (done) return last;
  }
}

async function pull(model, onPulled) {
  const progress = new Progress();
  controller = new AbortController();
  setRunning(true);
  $('#pull-progress').hidden = false;
  $('#pull-state').textContent = `Downloading ${model}`;
  progress.draw();
  say('');
  try {
    const res = await request('/admin/api/models/pull', { method: 'POST', body: { model }, signal: controller.signal });
    if (!res.ok) {
      let body = null;
      try { body = await res.json(); } catch { /* not JSON */ }
      throw new Error(errorMessage(res.status, body));
    }
    const last = await readLines(res, (line) => { progress.apply(line); progress.draw(); });
    if (last?.error) throw new Error(last.error);
    if (last?.status !== 'success') throw new Error('the download ended without a result');
    $('#pull-state').textContent = `Downloaded ${last.model}`;
    const cached = last.files - last.downloaded;
    say(`Downloaded ${last.model}: ${last.files} files` + (cached ? ` (${cached} of them were here already).` : '.'));
    await onPulled(last.model);
  } catch (e) {
    if (e.name === 'AbortError') {
      $('#pull-state').textContent = `Cancelled ${model}`;
      say('Cancelled: the partial files stay, and downloading it again resumes.');
    } else {
      $('#pull-state').textContent = `Failed: ${model}`;
      say(`Download failed: ${e.message}`, true);
    }
  } finally {
    controller = null;
    setRunning(false);
  }
}

// `onPulled(id)`: called once a model is downloaded (the server lists it then).
export function setUpPull(onPulled) {
  $('#pull-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const model = $('#pull-model').value.trim();
    if (model && !controller) pull(model, onPulled);
  });
  $('#pull-cancel').addEventListener('click', () => controller?.abort());
}
