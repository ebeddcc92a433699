// Tool calls and reasoning end to end: the scripted test model
// (`synth-model --arch scripted`, model/scripted_model.h) writes chosen
// Hermes / Qwen3 markup through the real server (pool, engine, detokenizer,
// output parser, formatters), driven by the official openai and
// @anthropic-ai/sdk clients: tool round trips streamed and not, parallel
// calls, reasoning_content and thinking blocks, the thinking budget closed
// by the engine, markup never in content, malformed markup as content.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startScriptedServer, http } from './harness.mjs';

const MODEL = 'scripted';
const CALL_PARIS = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const CALL_ROME = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>';
const LONG_THOUGHT = 'Let me weigh each option carefully. '.repeat(160);
const SCRIPT = {
  replies: [
    { when: 'What is the weather in Paris?', text: CALL_PARIS },
    { when: 'Weather in Paris and Rome?', text: `${CALL_PARIS}\n${CALL_ROME}` },
    { when: '21 C, sunny', text: 'It is 21 C and sunny in Paris.' },
    { when: 'What is 2+2? Think first.', text: '<think>\nTwo plus two is four.\n</think>\n\nThe answer is 4.' },
    { when: 'Think, then check the weather.', text: `<think>\nI need the weather tool.\n</think>\n\nLet me check.\n${CALL_PARIS}` },
    { when: 'Show broken markup.', text: 'Here: <tool_call>\n{"name": "get_weather", "arguments": {oops}}\n</tool_call>' },
    { when: 'Think for a long time.', text: `<think>\n${LONG_THOUGHT}\n</think>\n\nDone thinking.` },
    { text: 'Hello! How can I help?' },
  ],
};

let dir;
let server;
let openai;
let anthropic;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-scripted-'));
  server = await startScriptedServer(dir, MODEL, SCRIPT);
  openai = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
const anthropicTools = [{
  name: 'get_weather',
  description: 'The current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}];

function noMarkup(text) {
  for (const m of ['<tool_call>', '</tool_call>', '<think>', '</think>']) {
    assert.ok(!(text || '').includes(m), `markup ${m} reached the client: ${text}`);
  }
}

test('openai: a tool call round trip, not streamed', async () => {
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const first = await openai.chat.completions.create({ model: MODEL, messages, tools });
  const c = first.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });

  messages.push(c.message, { role: 'tool', tool_call_id: call.id, content: '21 C, sunny' });
  const second = await openai.chat.completions.create({ model: MODEL, messages, tools });
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.equal(second.choices[0].message.content, 'It is 21 C and sunny in Paris.');
  assert.equal(second.choices[0].message.tool_calls, undefined);
});

test('openai: a tool call round trip, streamed (the SDK stream helper)', async () => {
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const stream = openai.chat.completions.stream({ model: MODEL, messages, tools });
  let firstCallChunk = null;
  for await (const chunk of stream) {
    const tc = chunk.choices[0]?.delta?.tool_calls?.[0];
    if (tc && !firstCallChunk) firstCallChunk = tc;
  }
  // The call's first chunk names it; arguments follow in pieces.
  assert.equal(firstCallChunk.index, 0);
  assert.match(firstCallChunk.id, /^call_/);
  assert.equal(firstCallChunk.type, 'function');
  assert.equal(firstCallChunk.function.name, 'get_weather');
  const final = await stream.finalChatCompletion();
  const c = final.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  noMarkup(c.message.content);
  assert.deepEqual(JSON.parse(c.message.tool_calls[0].function.arguments), { city: 'Paris' });

  messages.push({ role: 'assistant', content: null, tool_calls: c.message.tool_calls },
    { role: 'tool', tool_call_id: c.message.tool_calls[0].id, content: '21 C, sunny' });
  const answer = openai.chat.completions.stream({ model: MODEL, messages, tools });
  const done = await answer.finalChatCompletion();
  assert.equal(done.choices[0].message.content, 'It is 21 C and sunny in Paris.');
  assert.equal(done.choices[0].finish_reason, 'stop');
});

test('openai: parallel calls, and parallel_tool_calls false keeps the first', async () => {
  const messages = [{ role: 'user', content: 'Weather in Paris and Rome?' }];
  const both = await openai.chat.completions.create({ model: MODEL, messages, tools });
  const calls = both.choices[0].message.tool_calls;
  assert.equal(calls.length, 2);
  assert.deepEqual(calls.map((c) => JSON.parse(c.function.arguments).city), ['Paris', 'Rome']);
  assert.notEqual(calls[0].id, calls[1].id);
  const streamed = await openai.chat.completions.stream({ model: MODEL, messages, tools }).finalChatCompletion();
  assert.deepEqual(streamed.choices[0].message.tool_calls.map((c) => JSON.parse(c.function.arguments).city), ['Paris', 'Rome']);
  const one = await openai.chat.completions.create({ model: MODEL, messages, tools, parallel_tool_calls: false });
  assert.equal(one.choices[0].message.tool_calls.length, 1);
  assert.equal(one.choices[0].finish_reason, 'tool_calls');
});

test('openai: reasoning_content in the message and in streamed deltas', async () => {
  const messages = [{ role: 'user', content: 'What is 2+2? Think first.' }];
  const r = await openai.chat.completions.create({ model: MODEL, messages });
  assert.equal(r.choices[0].message.reasoning_content, 'Two plus two is four.');
  assert.equal(r.choices[0].message.content, 'The answer is 4.');
  let reasoning = '', content = '';
  for await (const chunk of await openai.chat.completions.create({ model: MODEL, messages, stream: true })) {
    const d = chunk.choices[0]?.delta || {};
    reasoning += d.reasoning_content || '';
    content += d.content || '';
  }
  assert.equal(reasoning, 'Two plus two is four.');
  assert.equal(content, 'The answer is 4.');

  const both = await openai.chat.completions.create({
    model: MODEL, tools, messages: [{ role: 'user', content: 'Think, then check the weather.' }],
  });
  const m = both.choices[0].message;
  assert.equal(m.reasoning_content, 'I need the weather tool.');
  assert.equal(m.content, 'Let me check.');
  assert.equal(m.tool_calls[0].function.name, 'get_weather');
});

test('openai: malformed markup and tool_choice none are content, verbatim', async () => {
  const broken = await openai.chat.completions.create({
    model: MODEL, tools, messages: [{ role: 'user', content: 'Show broken markup.' }],
  });
  assert.equal(broken.choices[0].message.content, SCRIPT.replies[5].text);
  assert.equal(broken.choices[0].finish_reason, 'stop');
  const none = await openai.chat.completions.create({
    model: MODEL, tools, tool_choice: 'none', messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  });
  assert.equal(none.choices[0].message.content, CALL_PARIS);
  assert.equal(none.choices[0].message.tool_calls, undefined);
});

// Bounded arguments (additionalProperties false, maxLength): a call the
// model did not mean to write still ends within max_tokens.
const boundedTools = [{
  type: 'function',
  function: {
    name: 'get_weather', strict: true,
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'] },
  },
}];

test('openai: tool_choice required / a named function force a call in the model\'s markup', async () => {
  const tools = boundedTools;
  for (const tool_choice of ['required', { type: 'function', function: { name: 'get_weather' } }]) {
    // The model would write the call anyway: the grammar lets it through unchanged.
    const same = await openai.chat.completions.create({
      model: MODEL, tools, tool_choice, messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    });
    assert.equal(same.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(same.choices[0].message.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
      [['get_weather', { city: 'Paris' }]]);
    // The model would answer in text: the call is forced all the same. (Thinking
    // off: otherwise the output may open a think block first, which this
    // script would never close.)
    const forced = await openai.chat.completions.create({
      model: MODEL, tools, tool_choice, max_tokens: 200, chat_template_kwargs: { enable_thinking: false },
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    const calls = forced.choices[0].message.tool_calls;
    assert.ok(calls && calls.length >= 1, JSON.stringify(forced.choices[0]));
    assert.equal(calls[0].function.name, 'get_weather');
    assert.equal(typeof JSON.parse(calls[0].function.arguments), 'object');
    assert.ok(!forced.choices[0].message.content, 'no text beside a forced call');
  }
});

test('anthropic: a tool_use round trip, streamed with the SDK helper', async () => {
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const stream = anthropic.messages.stream({ model: MODEL, max_tokens: 256, tools: anthropicTools, messages });
  let json = '';
  stream.on('inputJson', (delta) => { json += delta; });
  const first = await stream.finalMessage();
  assert.equal(first.stop_reason, 'tool_use');
  assert.equal(first.content.length, 1);
  const use = first.content[0];
  assert.equal(use.type, 'tool_use');
  assert.match(use.id, /^toolu_/);
  assert.equal(use.name, 'get_weather');
  assert.deepEqual(use.input, { city: 'Paris' });
  assert.deepEqual(JSON.parse(json), { city: 'Paris' });

  messages.push({ role: 'assistant', content: first.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '21 C, sunny' }] });
  const second = await anthropic.messages.stream({ model: MODEL, max_tokens: 256, tools: anthropicTools, messages }).finalMessage();
  assert.equal(second.stop_reason, 'end_turn');
  assert.equal(second.content.length, 1);
  assert.equal(second.content[0].type, 'text');
  assert.equal(second.content[0].text, 'It is 21 C and sunny in Paris.');

  const plain = await anthropic.messages.create({ model: MODEL, max_tokens: 256, tools: anthropicTools, messages: messages.slice(0, 1) });
  assert.equal(plain.stop_reason, 'tool_use');
  assert.deepEqual(plain.content[0].input, { city: 'Paris' });
});

test('anthropic: thinking blocks with a signature, before text and tool_use', async () => {
  const params = {
    model: MODEL, max_tokens: 2048, tools: anthropicTools, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: 'Think, then check the weather.' }],
  };
  const m = await anthropic.messages.create(params);
  assert.deepEqual(m.content.map((b) => b.type), ['thinking', 'text', 'tool_use']);
  assert.equal(m.content[0].thinking, 'I need the weather tool.');
  assert.ok(m.content[0].signature.length > 0);
  assert.equal(m.content[1].text, 'Let me check.');
  assert.equal(m.stop_reason, 'tool_use');

  const stream = anthropic.messages.stream(params);
  const order = [];
  stream.on('streamEvent', (e) => {
    if (e.type === 'content_block_start') order.push(`start:${e.index}:${e.content_block.type}`);
    if (e.type === 'content_block_delta') order.push(`delta:${e.index}:${e.delta.type}`);
    if (e.type === 'content_block_stop') order.push(`stop:${e.index}`);
  });
  const final = await stream.finalMessage();
  assert.deepEqual(final.content.map((b) => b.type), ['thinking', 'text', 'tool_use']);
  assert.equal(final.content[0].thinking, 'I need the weather tool.');
  assert.equal(final.content[0].signature, m.content[0].signature);
  assert.deepEqual(final.content[2].input, { city: 'Paris' });
  const compact = order.filter((x, i) => x !== order[i - 1]);
  assert.deepEqual(compact, ['start:0:thinking', 'delta:0:thinking_delta', 'delta:0:signature_delta', 'stop:0',
    'start:1:text', 'delta:1:text_delta', 'stop:1', 'start:2:tool_use', 'delta:2:input_json_delta', 'stop:2']);

  // Thinking disabled: the template closes the block in the prompt; no thinking block.
  const off = await anthropic.messages.create({ ...params, thinking: { type: 'disabled' },
    messages: [{ role: 'user', content: 'Hi' }] });
  assert.deepEqual(off.content.map((b) => [b.type, b.text]), [['text', 'Hello! How can I help?']]);
});

test('anthropic: the thinking budget is enforced by the engine', async () => {
  const m = await anthropic.messages.create({
    model: MODEL, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: 'Think for a long time.' }],
  });
  assert.equal(m.content[0].type, 'thinking');
  const thought = m.content[0].thinking;
  assert.ok(thought.length < LONG_THOUGHT.length, 'the think block was cut at its budget');
  assert.ok(LONG_THOUGHT.startsWith(thought), 'what was thought is the script\'s start');
  assert.deepEqual(m.content.slice(1).map((b) => [b.type, b.text]), [['text', 'Done thinking.']]);
  assert.ok(m.usage.output_tokens < 1100, `about the budget's tokens: ${m.usage.output_tokens}`);
  // Adaptive thinking with a low effort: the same budget.
  const low = await anthropic.messages.create({
    model: MODEL, max_tokens: 4096, thinking: { type: 'adaptive' }, output_config: { effort: 'low' },
    messages: [{ role: 'user', content: 'Think for a long time.' }],
  });
  assert.equal(low.content[0].thinking, thought);
});

test('anthropic: tool_choice any / tool force a tool_use; a bad effort answers 400', async () => {
  const bounded = [{ name: 'get_weather', input_schema: { type: 'object', additionalProperties: false,
    properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'] } }];
  for (const tool_choice of [{ type: 'any' }, { type: 'tool', name: 'get_weather' }]) {
    const m = await anthropic.messages.create({ model: MODEL, max_tokens: 200, tools: bounded, tool_choice,
      thinking: { type: 'disabled' },
      messages: [{ role: 'user', content: 'Hello there' }] });
    assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m.content));
    const use = m.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.equal(typeof use.input, 'object');
  }
  const r = await http(`${server.url}/v1/messages`, 'POST', {
    model: MODEL, max_tokens: 16, thinking: { type: 'adaptive' }, output_config: { effort: 'extreme' },
    messages: [{ role: 'user', content: 'x' }],
  });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /output_config\.effort/);
});
