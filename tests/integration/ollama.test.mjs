// Ollama's API with the official `ollama` npm client, against a scripted
// model (chosen replies: thinking, tool calls) and, where ../shared is
// present, the random-weight qwen3-realtok-tiny with the real tokenizer
// (structured output under `format`): list, show, ps, version, chat and
// generate streamed (NDJSON) and not, think, tools, keep_alive loading and
// unloading, options, and errors as the strings Ollama's clients show.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ollama } from 'ollama';
import { startScriptedServer, startServer, sharedDir, http } from './harness.mjs';

const MODEL = 'scripted';
const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const SCRIPT = {
  replies: [
    { when: 'Weather in Paris?', text: CALL },
    { when: 'What is 2+2? Think first.', text: '<think>\nTwo plus two is four.\n</think>\n\nThe answer is 4.' },
    { when: 'Say hello.', text: 'Hello there, friend.' },
  ],
};
let dir;
let server;
let ollama;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-ollama-'));
  server = await startScriptedServer(dir, MODEL, SCRIPT);
  ollama = new Ollama({ host: server.url });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

test('version, list, show and ps', async () => {
  assert.match((await ollama.version()).version, /^\d+\.\d+\.\d+/);
  const list = await ollama.list();
  const entry = list.models.find((m) => m.name === MODEL);
  assert.ok(entry, JSON.stringify(list));
  assert.ok(entry.size > 0 && /^[0-9a-f]{64}$/.test(entry.digest), JSON.stringify(entry));
  assert.equal(entry.details.format, 'safetensors');
  const show = await ollama.show({ model: MODEL });
  assert.ok(show.capabilities.includes('completion') && show.capabilities.includes('tools'), JSON.stringify(show.capabilities));
  assert.ok(show.template.includes('<|im_start|>'), 'the chat template');
  // Loaded by an empty chat; kept for the keep_alive asked for.
  const loaded = await ollama.chat({ model: MODEL, messages: [], keep_alive: '10m' });
  assert.equal(loaded.done_reason, 'load');
  const ps = await ollama.ps();
  const running = ps.models.find((m) => m.name === MODEL);
  assert.ok(running, JSON.stringify(ps));
  const left = (new Date(running.expires_at) - Date.now()) / 1000;
  assert.ok(left > 500 && left <= 600, `expires in ${left} s`);
});

test('chat: streamed and whole, thinking apart, tool calls with object arguments', async () => {
  const whole = await ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'Say hello.' }], stream: false });
  assert.equal(whole.message.content, 'Hello there, friend.');
  assert.equal(whole.done, true);
  assert.equal(whole.done_reason, 'stop');
  assert.ok(whole.eval_count > 0 && whole.prompt_eval_count > 0 && whole.total_duration > 0, JSON.stringify(whole));
  let text = '';
  let last;
  for await (const part of await ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'Say hello.' }], stream: true })) {
    text += part.message.content;
    last = part;
  }
  assert.equal(text, 'Hello there, friend.');
  assert.equal(last.done, true);
  // (The scripted model writes its own <think>: `think` left to the template's default.)
  const think = await ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'What is 2+2? Think first.' }] });
  assert.equal(think.message.thinking.trim(), 'Two plus two is four.');
  assert.equal(think.message.content.trim(), 'The answer is 4.');
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: {
    type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const call = await ollama.chat({ model: MODEL, tools, messages: [{ role: 'user', content: 'Weather in Paris?' }] });
  assert.deepEqual(call.message.tool_calls, [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }]);
  assert.equal(call.message.content, '');
  let streamed = [];
  for await (const part of await ollama.chat({ model: MODEL, tools, stream: true, messages: [{ role: 'user', content: 'Weather in Paris?' }] })) {
    streamed = streamed.concat(part.message.tool_calls || []);
  }
  assert.deepEqual(streamed, [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }]);
  // The conversation goes on with the call and its result, as Ollama clients send them.
  const next = await ollama.chat({ model: MODEL, tools, messages: [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: '', tool_calls: call.message.tool_calls },
    { role: 'tool', tool_name: 'get_weather', content: '21 C, sunny' },
    { role: 'user', content: 'Say hello.' },
  ] });
  assert.equal(next.message.content, 'Hello there, friend.');
});

test('generate: streamed and whole, raw prompts, options', async () => {
  const whole = await ollama.generate({ model: MODEL, prompt: 'Say hello.', stream: false, options: { num_predict: 3, num_ctx: 4096 } });
  assert.equal(whole.done_reason, 'length');
  assert.equal(whole.eval_count, 3);
  let text = '';
  for await (const part of await ollama.generate({ model: MODEL, prompt: 'Say hello.', stream: true })) text += part.response;
  assert.equal(text, 'Hello there, friend.');
  const raw = await ollama.generate({ model: MODEL, prompt: 'Say hello.', raw: true, stream: false, options: { num_predict: 2 } });
  assert.equal(raw.done, true);
  assert.equal(raw.eval_count, 2);
});

test('keep_alive 0 unloads; errors are strings that say what to fix', async () => {
  await ollama.generate({ model: MODEL, prompt: 'Say hello.', stream: false });
  const unloaded = await ollama.generate({ model: MODEL, prompt: '', keep_alive: 0 });
  assert.equal(unloaded.done_reason, 'unload');
  assert.equal((await ollama.ps()).models.length, 0);
  await assert.rejects(ollama.chat({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }), (e) => {
    assert.equal(e.status_code, 404);
    assert.match(e.message, /no-such-model.*does not exist/);
    return true;
  });
  await assert.rejects(ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'x' }], options: { mirostat: 2 } }),
    (e) => e.status_code === 400 && /options\.mirostat/.test(e.message));
  await assert.rejects(ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'x', images: ['aGk='] }] }),
    (e) => e.status_code === 400 && /images/.test(e.message));
  await assert.rejects(ollama.generate({ model: MODEL, prompt: 'x', keep_alive: 'soon' }),
    (e) => e.status_code === 400 && /keep_alive/.test(e.message));
  const r = await http(`${server.url}/api/nope`, 'GET');
  assert.equal(r.status, 404);
  assert.equal(typeof r.json.error, 'string');
});

test('format: a JSON Schema holds on a random-weight model', { skip: !sharedDir && 'no ../shared' }, async () => {
  const real = await startServer(['--model-dir', path.join(sharedDir, 'reference', 'models')]);
  try {
    const client = new Ollama({ host: real.url });
    const format = { type: 'object', properties: { color: { enum: ['red', 'blue'] }, n: { type: 'integer', minimum: 0, maximum: 9 } },
      required: ['color', 'n'], additionalProperties: false };
    for (const stream of [false, true]) {
      let content = '';
      const r = await client.chat({ model: 'qwen3-realtok-tiny', think: false, format, stream, options: { seed: 4, num_predict: 60 },
        messages: [{ role: 'user', content: 'A color.' }] });
      if (stream) for await (const part of r) content += part.message.content;
      else content = r.message.content;
      const v = JSON.parse(content);
      assert.ok(['red', 'blue'].includes(v.color) && Number.isInteger(v.n) && v.n >= 0 && v.n <= 9, content);
    }
    const json = await client.generate({ model: 'qwen3-realtok-tiny', think: false, format: 'json', prompt: 'JSON.',
      stream: false, options: { num_predict: 40, seed: 2 } });
    // Any JSON object: whole when the model closed it, else cut at num_predict.
    if (json.done_reason === 'stop') assert.equal(typeof JSON.parse(json.response), 'object', json.response);
    else assert.match(json.response, /^\s*\{/);
  } finally {
    const { code } = await real.stop();
    assert.equal(code, 0);
  }
});
