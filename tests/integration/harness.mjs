// Starts a real `llmhost serve` on 127.0.0.1 (port 0: the server picks one
// and prints it) with a temporary --home, and stops it with SIGTERM,
// checking that it exits 0 after draining. With --ssl-cert its url is https://
// (fetchTrusting: a fetch for it).
//
// Environment: LLMHOST_BIN (the binary), LLMHOST_SOURCE_DIR (the repository),
// LLMHOST_SHARED_DIR (../shared; optional).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, existsSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const sourceDir = process.env.LLMHOST_SOURCE_DIR || path.resolve(here, '..', '..');
export const binary = process.env.LLMHOST_BIN || path.join(sourceDir, 'build', 'llmhost');
export const fixtures = path.join(sourceDir, 'tests', 'data', 'models');
const sharedCandidate = process.env.LLMHOST_SHARED_DIR || path.resolve(sourceDir, '..', 'shared');
export const sharedDir = existsSync(sharedCandidate) ? sharedCandidate : null;

// `home`: a --home to start in again (default: a new temporary one).
// Writes the scripted test model `name` (its replies: `script`) under
// dir/models and starts a server on that folder (with `args` besides).
export async function startScriptedServer(dir, name, script, args = [], env = {}) {
  const file = path.join(dir, 'script.json');
  writeFileSync(file, JSON.stringify(script));
  const r = spawnSync(binary, ['synth-model', '--arch', 'scripted', '--script', file, '--out',
    path.join(dir, 'models', name)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('synth-model --arch scripted: ' + r.stderr);
  return startServer(['--model-dir', path.join(dir, 'models'), ...args], env);
}

export async function startServer(args = [], env = {}, home = null) {
  home = home || mkdtempSync(path.join(tmpdir(), 'llmhost-it-'));
  const proc = spawn(binary, ['serve', '--home', home, '--port', '0', ...args], {
    env: { ...process.env, LLMHOST_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  let scheme = 'http';
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('server did not start: ' + stderr)), 60000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (https?):\/\/[^:]+:(\d+)/);
      if (m) {
        clearTimeout(timer);
        scheme = m[1];
        resolve(Number(m[2]));
      }
    });
    exited.then(({ code }) => reject(new Error(`server exited (${code}) before listening: ${stderr}`)));
  });
  const url = `${scheme}://127.0.0.1:${port}`;
  return {
    port,
    url,
    home,
    get stderr() { return stderr; },
    // SIGTERM: the server drains and must exit 0.
    async stop() {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

// POST/GET helper over fetch (or `fetchFn`, e.g. fetchTrusting's). Returns
// {status, headers, text, json}.
export async function http(url, method = 'GET', body = undefined, headers = {}, fetchFn = fetch) {
  const res = await fetchFn(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

// A fetch() over node:https that trusts the PEM certificate `ca` alone (Node's
// own fetch takes no CA but from NODE_EXTRA_CA_CERTS at start): for SDKs'
// `fetch` option. Bodies are strings or bytes; `signal` aborts.
export function fetchTrusting(ca) {
  const agent = new https.Agent({ ca, keepAlive: true });
  return (input, init = {}) => new Promise((resolve, reject) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const method = init.method || 'GET';
    const headers = Object.fromEntries(new Headers(init.headers));
    const req = https.request(url, { method, headers, agent, signal: init.signal }, (res) => {
      const h = new Headers();
      for (let i = 0; i < res.rawHeaders.length; i += 2) h.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
      const empty = method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304;
      resolve(new Response(empty ? null : Readable.toWeb(res), { status: res.statusCode, headers: h }));
    });
    req.on('error', reject);
    req.end(init.body ?? undefined);
  });
}

// Parses an SSE body into [{event, data}] (comments as event ':').
export function parseSse(text) {
  const events = [];
  for (const block of text.split('\n\n')) {
    if (!block.trim()) continue;
    let event = '', data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
      else if (line.startsWith(':')) event = ':';
    }
    events.push({ event, data });
  }
  return events;
}

// Engine statistics of one model from GET /api/status.
export async function engineStatus(url, model, headers = {}) {
  const r = await http(`${url}/api/status`, 'GET', undefined, headers);
  return (r.json.models || []).find((m) => m.id === model);
}

// Polls until pred(status) holds (bounded: no speed is asserted).
export async function waitFor(fn, what, tries = 600) {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out waiting for ' + what);
}
