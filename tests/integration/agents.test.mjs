// Real coding agents, headless, against `llmhost serve` and the scripted
// test model: Claude Code (`claude -p`: a plain prompt, and a Read tool round
// trip) over /v1/messages, and the Codex CLI (`codex exec` with a
// model_providers entry, wire_api "responses") over /v1/responses. Each must
// exit 0 with the scripted answer.
//
// The CLIs are large (hundreds of MB with their native binaries), so they are
// not in package.json: tests skip unless LLMHOST_CLAUDE_BIN / LLMHOST_CODEX_BIN
// name them, or they are installed here (`npm install --no-save
// @anthropic-ai/claude-code @openai/codex` in tests/integration).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScriptedServer } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const find = (env, name) => {
  if (process.env[env]) return process.env[env];
  const local = path.join(here, 'node_modules', '.bin', name);
  return existsSync(local) ? local : null;
};
const claude = find('LLMHOST_CLAUDE_BIN', 'claude');
const codex = find('LLMHOST_CODEX_BIN', 'codex');
const MODEL = 'scripted';

let dir;
let work;
let server;

before(async () => {
  if (!claude && !codex) return;
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-agents-'));
  work = path.join(dir, 'work');
  mkdirSync(work);
  writeFileSync(path.join(work, 'hello.txt'), 'MAGIC-WORD-42\n');
  const script = {
    replies: [
      { when: 'What does hello.txt say?', text: 'Let me read it.\n<tool_call>\n' +
        JSON.stringify({ name: 'Read', arguments: { file_path: path.join(work, 'hello.txt') } }) + '\n</tool_call>' },
      { when: 'MAGIC-WORD-42', text: 'The file says MAGIC-WORD-42.' },
      { text: 'Hi there.' },
    ],
  };
  server = await startScriptedServer(dir, MODEL, script);
});

after(async () => {
  if (!server) return;
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

// Runs an agent CLI with its own HOME; returns {status, stdout, stderr}.
function run(bin, args, env) {
  const home = mkdtempSync(path.join(dir, 'home-'));
  return spawnSync(bin, args, {
    cwd: work, encoding: 'utf8', timeout: 120000,
    env: { PATH: process.env.PATH, HOME: home, ...env },
  });
}

function claudeEnv() {
  return {
    ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-local', ANTHROPIC_MODEL: MODEL,
    ANTHROPIC_SMALL_FAST_MODEL: MODEL, CLAUDE_CODE_MAX_OUTPUT_TOKENS: '512',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1',
  };
}

test('claude code: a plain prompt exits 0', { skip: !claude && 'Claude Code is not installed' }, () => {
  const r = run(claude, ['-p', 'Say hi'], claudeEnv());
  assert.equal(r.status, 0, r.stderr + r.stdout);
  assert.equal(r.stdout.trim(), 'Hi there.');
});

test('claude code: a Read tool round trip completes', { skip: !claude && 'Claude Code is not installed' }, () => {
  const r = run(claude, ['-p', 'What does hello.txt say?', '--allowedTools', 'Read'], claudeEnv());
  assert.equal(r.status, 0, r.stderr + r.stdout);
  assert.equal(r.stdout.trim(), 'The file says MAGIC-WORD-42.');
});

test('codex exec over the Responses API exits 0', { skip: !codex && 'the Codex CLI is not installed' }, () => {
  const codexHome = mkdtempSync(path.join(dir, 'codex-'));
  writeFileSync(path.join(codexHome, 'config.toml'), [
    `model = "${MODEL}"`, 'model_provider = "llmhost"', '', '[model_providers.llmhost]', 'name = "llmhost"',
    `base_url = "${server.url}/v1"`, 'wire_api = "responses"', ''].join('\n'));
  const r = run(codex, ['exec', '--skip-git-repo-check', 'Say hi'], { CODEX_HOME: codexHome });
  assert.equal(r.status, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /Hi there\./);
});
