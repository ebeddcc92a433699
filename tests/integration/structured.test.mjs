// Structured output end to end on a random-weight model with the real Qwen3
// tokenizer and chat template (qwen3-realtok-tiny, from ../shared): whatever
// the weights prefer, a bounded JSON Schema (additionalProperties false,
// enums, maxLength, bounded integers and arrays; whitespace is bounded by
// default) always comes back schema-valid, through raw requests, the OpenAI
// SDK's zod `.parse()` and the Vercel AI SDK's generateObject; forced tool
// calls parse into tool_calls / tool_use; guided_choice, guided_regex and
// GBNF grammars hold; bad schemas, regexes and grammars are 400s that say
// what and where.
//
// Thinking is turned off (chat_template_kwargs) so that the constraint starts
// at the first token: a random model left to open a think block would
// wander in it (tools.test.mjs / responses.test.mjs cover the think block
// before a constraint with the scripted model).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { zodResponseFormat } from 'openai/helpers/zod';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { generateObject } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';
import { ChatOpenAI } from '@langchain/openai';
import { startServer, sharedDir, http, parseSse } from './harness.mjs';

const MODEL = 'qwen3-realtok-tiny';
const NO_THINK = { chat_template_kwargs: { enable_thinking: false } };
const skip = !sharedDir && 'no ../shared (qwen3-realtok-tiny)';
let server;
let openai;
let anthropic;

before(async () => {
  if (skip) return;
  server = await startServer(['--model-dir', path.join(sharedDir, 'reference', 'models')]);
  openai = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  if (skip) return;
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
});

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    color: { enum: ['red', 'green', 'blue'] },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, maxItems: 3 },
    ok: { type: 'boolean' },
  },
  required: ['name', 'color', 'age', 'tags', 'ok'],
  additionalProperties: false,
};

// The schema's rules, checked by hand: [] when `v` is valid.
function personErrors(v) {
  const errors = [];
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return ['not an object'];
  const keys = Object.keys(v);  // in the schema's order
  if (JSON.stringify(keys) !== JSON.stringify(['name', 'color', 'age', 'tags', 'ok'])) errors.push('keys ' + keys);
  if (typeof v.name !== 'string' || [...v.name].length > 8) errors.push('name ' + JSON.stringify(v.name));
  if (!['red', 'green', 'blue'].includes(v.color)) errors.push('color ' + v.color);
  if (!Number.isInteger(v.age) || v.age < 0 || v.age > 120) errors.push('age ' + v.age);
  if (!Array.isArray(v.tags) || v.tags.length > 3 || v.tags.some((t) => !['a', 'b', 'c'].includes(t))) {
    errors.push('tags ' + JSON.stringify(v.tags));
  }
  if (typeof v.ok !== 'boolean') errors.push('ok ' + v.ok);
  return errors;
}

function assertPerson(text) {
  let v;
  assert.doesNotThrow(() => { v = JSON.parse(text); }, 'not JSON: ' + text);
  assert.deepEqual(personErrors(v), [], text);
}

const responseFormat = { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } };

test('json_schema response_format: every choice is schema-valid, streamed or not', { skip }, async () => {
  for (const seed of [1, 2, 3]) {
    const r = await openai.chat.completions.create({
      model: MODEL, seed, n: 2, max_tokens: 300, response_format: responseFormat, ...NO_THINK,
      messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
    });
    for (const c of r.choices) {
      assert.equal(c.finish_reason, 'stop', JSON.stringify(c));
      assertPerson(c.message.content);
    }
  }
  const s = await http(`${server.url}/v1/chat/completions`, 'POST', {
    model: MODEL, seed: 9, max_tokens: 300, stream: true, response_format: responseFormat, ...NO_THINK,
    messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
  });
  assert.equal(s.status, 200);
  let text = '';
  for (const e of parseSse(s.text)) {
    if (e.data && e.data !== '[DONE]') text += JSON.parse(e.data).choices[0]?.delta?.content || '';
  }
  assertPerson(text);
});

test('LangChain withStructuredOutput: a zod schema, as json_schema and as a forced function call', { skip }, async () => {
  const Pet = z.object({ kind: z.enum(['cat', 'dog']), legs: z.number().int().min(0).max(4), ok: z.boolean() });
  const llm = new ChatOpenAI({
    model: MODEL, apiKey: 'unused', maxTokens: 200, maxRetries: 0, modelKwargs: NO_THINK,
    configuration: { baseURL: server.url + '/v1' },
  });
  for (const method of ['jsonSchema', 'functionCalling']) {
    const pet = await llm.withStructuredOutput(Pet, { name: 'pet', method }).invoke('Describe a pet.');
    assert.deepEqual(Object.keys(pet), ['kind', 'legs', 'ok'], method + ': ' + JSON.stringify(pet));
    assert.ok(['cat', 'dog'].includes(pet.kind), method + ': ' + JSON.stringify(pet));
    assert.ok(Number.isInteger(pet.legs) && pet.legs >= 0 && pet.legs <= 4, method + ': ' + JSON.stringify(pet));
    assert.equal(typeof pet.ok, 'boolean', method);
  }
});

test('Responses API: text.format json_schema gives schema-valid output_text', { skip }, async () => {
  const r = await openai.responses.create({
    model: MODEL, input: 'Describe a person as JSON.', max_output_tokens: 300, reasoning: { effort: 'none' },
    text: { format: { type: 'json_schema', name: 'person', strict: true, schema: person } },
  });
  assert.equal(r.status, 'completed', JSON.stringify(r));
  assertPerson(r.output_text);
});

test('json_object, the completions API and llama.cpp\'s json_schema field', { skip }, async () => {
  const r = await openai.chat.completions.create({
    model: MODEL, seed: 4, max_tokens: 200, response_format: { type: 'json_object' }, ...NO_THINK,
    messages: [{ role: 'user', content: 'Any JSON object.' }],
  });
  // Unbounded: the object may not close within max_tokens, but what came is an object's start.
  assert.match(r.choices[0].message.content, /^\s*\{/);
  const c = await http(`${server.url}/v1/completions`, 'POST', {
    model: MODEL, prompt: 'Person:', seed: 5, max_tokens: 300, json_schema: person,
  });
  assert.equal(c.status, 200, c.text);
  assertPerson(c.json.choices[0].text);
});

test('the OpenAI SDK\'s zod .parse() helper', { skip }, async () => {
  const Person = z.object({
    name: z.string().max(8),
    color: z.enum(['red', 'green', 'blue']),
    ok: z.boolean(),
  });
  const r = await openai.chat.completions.parse({
    model: MODEL, seed: 6, max_tokens: 200, response_format: zodResponseFormat(Person, 'person'), ...NO_THINK,
    messages: [{ role: 'user', content: 'A person.' }],
  });
  const parsed = r.choices[0].message.parsed;
  assert.ok(parsed, JSON.stringify(r.choices[0]));
  assert.deepEqual(Person.parse(parsed), parsed);
});

test('the Vercel AI SDK\'s generateObject', { skip }, async () => {
  const provider = createOpenAICompatible({ name: 'llmhost', baseURL: server.url + '/v1', supportsStructuredOutputs: true });
  const schema = z.object({ city: z.string().max(10), sunny: z.boolean(), rating: z.enum(['low', 'high']) });
  const { object } = await generateObject({
    model: provider.chatModel(MODEL), schema, seed: 7, maxOutputTokens: 200, maxRetries: 0,
    providerOptions: { llmhost: NO_THINK },
    prompt: 'The weather in a city.',
  });
  assert.deepEqual(schema.parse(object), object);
});

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather', strict: true,
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 },
      unit: { enum: ['c', 'f'] } }, required: ['city', 'unit'] },
  },
};
const timeTool = {
  type: 'function',
  function: { name: 'get_time', parameters: { type: 'object', properties: {}, additionalProperties: false } },
};

test('forced tool calls parse into tool_calls (OpenAI) and tool_use (Anthropic)', { skip }, async () => {
  for (const [tool_choice, names] of [['required', ['get_weather', 'get_time']],
    [{ type: 'function', function: { name: 'get_weather' } }, ['get_weather']]]) {
    const r = await openai.chat.completions.create({
      model: MODEL, seed: 8, max_tokens: 300, tools: [weatherTool, timeTool], tool_choice, parallel_tool_calls: false,
      ...NO_THINK, messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.equal(c.message.tool_calls.length, 1);
    const call = c.message.tool_calls[0].function;
    assert.ok(names.includes(call.name), call.name);
    const args = JSON.parse(call.arguments);
    if (call.name === 'get_weather') {
      assert.deepEqual(Object.keys(args), ['city', 'unit']);
      assert.ok([...args.city].length <= 12 && ['c', 'f'].includes(args.unit), call.arguments);
    } else {
      assert.deepEqual(args, {});
    }
  }
  // Anthropic has no strict mode: the schema closes the object itself.
  const anthropicTool = { name: 'get_weather', input_schema: { ...weatherTool.function.parameters, additionalProperties: false } };
  for (const tool_choice of [{ type: 'any', disable_parallel_tool_use: true },
    { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true }]) {
    const m = await anthropic.messages.create({
      model: MODEL, max_tokens: 300, tools: [anthropicTool], tool_choice, thinking: { type: 'disabled' },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m.content));
    const use = m.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.ok(typeof use.input.city === 'string' && ['c', 'f'].includes(use.input.unit), JSON.stringify(use.input));
  }
});

// Every tool-call markup, chosen with the tool_parser setting: the forced
// call is written in that format's markup (bare-text parameters for
// qwen3_coder and glm45, Python keywords for pythonic, channels for
// harmony) and parses back into a call that fits the schema.
test('forced tool calls in every tool-call format', { skip }, async () => {
  const settings = `${server.url}/admin/api/models/${MODEL}/settings`;
  const codeTool = {
    type: 'function',
    function: { name: 'run', strict: true, parameters: { type: 'object', properties: {
      cmd: { type: 'string', maxLength: 16 }, lines: { type: 'integer', minimum: 1, maximum: 50 },
      shell: { enum: ['sh', 'bash'] } }, required: ['cmd', 'lines', 'shell'] } },
  };
  try {
    for (const format of ['qwen3_coder', 'glm45', 'pythonic', 'deepseek_v3', 'deepseek_v31', 'harmony', 'mistral',
      'llama3_json', 'kimi_k2', 'hermes']) {
      const put = await http(settings, 'PUT', { tool_parser: format });
      assert.equal(put.status, 200, put.text);
      const r = await openai.chat.completions.create({
        model: MODEL, seed: 3, max_tokens: 200, tools: [codeTool], tool_choice: 'required', parallel_tool_calls: false,
        ...NO_THINK, messages: [{ role: 'user', content: 'List files.' }],
      });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', format + ': ' + JSON.stringify(c));
      assert.equal(c.message.tool_calls.length, 1, format);
      const call = c.message.tool_calls[0].function;
      assert.equal(call.name, 'run', format);
      const args = JSON.parse(call.arguments);
      assert.deepEqual(Object.keys(args), ['cmd', 'lines', 'shell'], format + ': ' + call.arguments);
      assert.ok(typeof args.cmd === 'string' && [...args.cmd].length <= 16, format + ': ' + call.arguments);
      assert.ok(Number.isInteger(args.lines) && args.lines >= 1 && args.lines <= 50, format + ': ' + call.arguments);
      assert.ok(['sh', 'bash'].includes(args.shell), format + ': ' + call.arguments);
    }
    // The setting picks the grammar: pythonic calls need Python names.
    await http(settings, 'PUT', { tool_parser: 'pythonic' });
    const bad = await http(`${server.url}/v1/chat/completions`, 'POST', {
      model: MODEL, max_tokens: 8, tools: [{ type: 'function', function: { name: 'run-it' } }], tool_choice: 'required',
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.text, /run-it.*Python name/);
  } finally {
    await http(settings, 'PUT', { tool_parser: null });
  }
});

// Anthropic's structured outputs: the SDK's messages.parse with a zod
// output format (output_config.format) and the beta's output_format.
test('Anthropic SDK messages.parse with zodOutputFormat, and output_format', { skip }, async () => {
  // The SDK moves what Anthropic does not enforce (maxLength, minimum, ...)
  // into descriptions, so only enums and booleans bound the random model.
  const Pet = z.object({ kind: z.enum(['cat', 'dog']), name: z.enum(['Rex', 'Tom']), tame: z.boolean() });
  const m = await anthropic.messages.parse({
    model: MODEL, max_tokens: 200, thinking: { type: 'disabled' },
    messages: [{ role: 'user', content: 'A pet, please.' }],
    output_config: { format: zodOutputFormat(Pet) },
  });
  assert.equal(m.stop_reason, 'end_turn', JSON.stringify(m.content));
  assert.ok(m.parsed_output, JSON.stringify(m.content));
  assert.ok(['cat', 'dog'].includes(m.parsed_output.kind) && ['Rex', 'Tom'].includes(m.parsed_output.name) &&
    typeof m.parsed_output.tame === 'boolean', JSON.stringify(m.parsed_output));
  const beta = await http(`${server.url}/v1/messages`, 'POST', {
    model: MODEL, max_tokens: 200, thinking: { type: 'disabled' }, messages: [{ role: 'user', content: 'A pet.' }],
    output_format: { type: 'json_schema', schema: { type: 'object', properties: { kind: { enum: ['cat', 'dog'] } }, required: ['kind'] } },
  });
  assert.equal(beta.status, 200, beta.text);
  const text = beta.json.content.find((b) => b.type === 'text').text;
  assert.deepEqual(Object.keys(JSON.parse(text)), ['kind'], text);
});

test('guided_choice, guided_regex, structured_outputs and GBNF grammars', { skip }, async () => {
  const ask = (extra) => http(`${server.url}/v1/chat/completions`, 'POST', {
    model: MODEL, max_tokens: 40, n: 3, seed: 10, ...NO_THINK, messages: [{ role: 'user', content: 'Pick.' }], ...extra,
  });
  const texts = async (extra) => {
    const r = await ask(extra);
    assert.equal(r.status, 200, r.text);
    return r.json.choices.map((c) => c.message.content);
  };
  for (const t of await texts({ guided_choice: ['yes', 'no', 'maybe later'] })) assert.ok(['yes', 'no', 'maybe later'].includes(t), t);
  for (const t of await texts({ guided_regex: '[0-9]{3}-[a-z]{2}' })) assert.match(t, /^[0-9]{3}-[a-z]{2}$/);
  for (const t of await texts({ structured_outputs: { choice: ['left', 'right'] } })) assert.ok(['left', 'right'].includes(t), t);
  for (const t of await texts({ grammar: 'root ::= "x=" [1-9] [0-9]? ";"' })) assert.match(t, /^x=[1-9][0-9]?;$/);
});

test('bad schemas, regexes and grammars are 400s that say what and where', { skip }, async () => {
  const post = (extra) => http(`${server.url}/v1/chat/completions`, 'POST', {
    model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'x' }], ...extra,
  });
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object',
      properties: { a: { type: 'string', pattern: '(?=a)b' } } } } } }, 'response_format', /properties\/a|pattern|look/i],
    [{ guided_regex: 'ab(' }, 'guided_regex', /\S/],
    [{ grammar: 'root ::= missing' }, 'grammar', /missing/],
    [{ guided_json: { type: 'object' }, guided_regex: 'a' }, 'guided_regex', /guided_json.*guided_regex|cannot be used together/],
  ];
  for (const [extra, param, message] of cases) {
    const r = await post(extra);
    assert.equal(r.status, 400, JSON.stringify(extra) + ' → ' + r.text);
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.ok(r.json.error.param.startsWith(param), r.text);
    assert.match(r.json.error.message, message);
  }
});
