// The commands that talk to a running server (llmhost ls, ps, show, run),
// run as a user would against a real `llmhost serve` with a scripted model:
// tables, a one-shot answer with its reasoning apart, an interactive chat
// fed on stdin, and the errors (unknown model, no server) on stderr with
// exit status 1.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startScriptedServer, binary } from './harness.mjs';

const MODEL = 'scripted';
let dir;
let server;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-cli-'));
  server = await startScriptedServer(dir, MODEL, { replies: [
    { when: 'What is 2+2? Think first.', text: '<think>\nTwo plus two is four.\n</think>\n\nThe answer is 4.' },
    { when: 'Say hello.', text: 'Hello there, friend.' },
  ] });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

function llmhost(args, input = undefined, env = {}) {
  return spawnSync(binary, args, { input, encoding: 'utf8', env: { ...process.env, LLMHOST_URL: server.url, ...env }, timeout: 60000 });
}

test('ls, run, ps and show', () => {
  const ls = llmhost(['ls']);
  assert.equal(ls.status, 0, ls.stderr);
  const lines = ls.stdout.trim().split('\n');
  assert.match(lines[0], /^NAME\s+KIND\s+STATE\s+SIZE\s+CONTEXT$/);
  assert.match(lines.find((l) => l.startsWith(MODEL)), /^scripted\s+chat\s+-\s+[\d.]+ [KMG]iB\s+\d+$/);

  const run = llmhost(['run', MODEL, 'What is 2+2?', 'Think', 'first.']);
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout, 'Thinking: Two plus two is four.\n\nThe answer is 4.\n');

  const ps = llmhost(['ps']);
  assert.equal(ps.status, 0, ps.stderr);
  assert.match(ps.stdout, /^NAME\s+SIZE\s+PROCESSOR\s+CONTEXT\s+UNTIL\nscripted\s+[\d.]+ [KMG]iB\s+CPU\s+\d+\s+forever\n$/);

  const show = llmhost(['show', MODEL]);
  assert.equal(show.status, 0, show.stderr);
  assert.match(show.stdout, /^format\s+safetensors$/m);
  assert.match(show.stdout, /^capabilities\s+completion, tools, thinking$/m);
  const template = llmhost(['show', MODEL, '--template']);
  assert.match(template.stdout, /<\|im_start\|>/);
});

test('run: one answer per line of stdin, until /bye', () => {
  const r = llmhost(['run', MODEL], 'Say hello.\nWhat is 2+2? Think first.\n/bye\nSay hello.\n');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'Hello there, friend.\nThinking: Two plus two is four.\n\nThe answer is 4.\n');
});

test('errors: an unknown model, no server, a bad URL', () => {
  const unknown = llmhost(['run', 'nope', 'hi']);
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /404: The model 'nope' does not exist/);
  const show = llmhost(['show', 'nope']);
  assert.equal(show.status, 1);
  assert.match(show.stderr, /nope/);
  const none = llmhost(['ls', '--url', 'http://127.0.0.1:9']);
  assert.equal(none.status, 1);
  assert.match(none.stderr, /no llmhost server answers at http:\/\/127\.0\.0\.1:9/);
  const bad = llmhost(['ps', '--url', 'ftp://example.com']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /give the server as http:\/\/HOST\[:PORT\]/);
});
