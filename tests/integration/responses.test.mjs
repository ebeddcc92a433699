// POST /v1/responses through the official openai SDK (responses.create and
// the responses.stream helper), against the scripted test model: output
// items for reasoning, text and function calls, a function-call round trip
// by input items and by previous_response_id, GET /v1/responses/{id}, tools
// of other types left out, and the 400s.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startScriptedServer, http, parseSse } from './harness.mjs';

const MODEL = 'scripted';
const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const SCRIPT = {
  replies: [
    { when: 'What is the weather in Paris?', text: `<think>\nI need the tool.\n</think>\n\nChecking.\n${CALL}` },
    { when: '21 C, sunny', text: 'It is 21 C and sunny in Paris.' },
    { when: 'Count to three.', text: 'One, two, three.' },
    { when: 'And backwards?', text: 'Three, two, one.' },
    { text: 'Hello!' },
  ],
};

let dir;
let server;
let client;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-responses-'));
  server = await startScriptedServer(dir, MODEL, SCRIPT);
  client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

const tools = [
  { type: 'function', name: 'get_weather', description: 'The weather in a city', strict: false,
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  { type: 'web_search' },  // Codex sends tools of other types: left out of the prompt
];

test('responses: reasoning, text and a function call as output items; a round trip by input items', async () => {
  const input = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const r = await client.responses.create({ model: MODEL, input, tools, instructions: 'Use the tools.' });
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'message', 'function_call']);
  assert.equal(r.output[0].content[0].text, 'I need the tool.');
  assert.equal(r.output_text, 'Checking.');
  const call = r.output[2];
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
  assert.ok(r.usage.output_tokens_details.reasoning_tokens > 0);
  assert.equal(r.instructions, 'Use the tools.');

  const next = await client.responses.create({
    model: MODEL, tools,
    input: [...input, ...r.output, { type: 'function_call_output', call_id: call.call_id, output: '21 C, sunny' }],
  });
  assert.equal(next.output_text, 'It is 21 C and sunny in Paris.');
  assert.deepEqual(next.output.map((o) => o.type), ['message']);
});

test('responses: the stream helper, events in order, the final response', async () => {
  const stream = client.responses.stream({ model: MODEL, tools, input: 'What is the weather in Paris?' });
  const types = [];
  let text = '', args = '', reasoning = '';
  for await (const event of stream) {
    if (types[types.length - 1] !== event.type) types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.function_call_arguments.delta') args += event.delta;
    if (event.type === 'response.reasoning_text.delta') reasoning += event.delta;
  }
  const final = await stream.finalResponse();
  assert.equal(types[0], 'response.created');
  assert.equal(types[1], 'response.in_progress');
  assert.equal(types[types.length - 1], 'response.completed');
  for (const t of ['response.output_item.added', 'response.content_part.added', 'response.output_text.done',
    'response.content_part.done', 'response.function_call_arguments.done', 'response.output_item.done']) {
    assert.ok(types.includes(t), t);
  }
  assert.equal(reasoning, 'I need the tool.');
  assert.equal(text, 'Checking.');
  assert.deepEqual(JSON.parse(args), { city: 'Paris' });
  assert.deepEqual(final.output.map((o) => o.type), ['reasoning', 'message', 'function_call']);
  assert.equal(final.output[1].content[0].text, 'Checking.');
  assert.equal(final.status, 'completed');
});

test('responses: previous_response_id continues a stored conversation; GET returns it', async () => {
  const first = await client.responses.create({ model: MODEL, input: 'Count to three.' });
  assert.equal(first.output_text, 'One, two, three.');
  const second = await client.responses.create({ model: MODEL, input: 'And backwards?', previous_response_id: first.id });
  assert.equal(second.output_text, 'Three, two, one.');
  assert.equal(second.previous_response_id, first.id);
  const got = await client.responses.retrieve(first.id);
  assert.equal(got.id, first.id);
  assert.equal(got.output_text, 'One, two, three.');
  const unstored = await client.responses.create({ model: MODEL, input: 'Count to three.', store: false });
  assert.equal((await http(`${server.url}/v1/responses/${unstored.id}`)).status, 404);
});

test('responses: tool_choice required keeps the reasoning and forces the call after it', async () => {
  const bounded = [{ type: 'function', name: 'get_weather', strict: true,
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'] } }];
  // The script thinks, then writes "Checking." before its call: the think
  // block stays free, the text after it is not allowed.
  const r = await client.responses.create({ model: MODEL, input: 'What is the weather in Paris?', tools: bounded,
    tool_choice: 'required', max_output_tokens: 300 });
  assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'function_call']);
  assert.equal(r.output[0].content[0].text, 'I need the tool.');
  assert.equal(r.output[1].name, 'get_weather');
  assert.equal(typeof JSON.parse(r.output[1].arguments).city, 'string');
});

test('responses: max_output_tokens ends incomplete; bad requests are 400s', async () => {
  const r = await http(`${server.url}/v1/responses`, 'POST', { model: MODEL, input: 'Count to three.', max_output_tokens: 2, stream: true });
  const events = parseSse(r.text).filter((e) => e.event !== ':');
  assert.equal(events[events.length - 1].event, 'response.incomplete');
  assert.equal(JSON.parse(events[events.length - 1].data).response.incomplete_details.reason, 'max_output_tokens');
  await assert.rejects(client.responses.create({ model: MODEL, input: 'x', previous_response_id: 'resp_nope' }),
    (e) => e.status === 400 && /previous_response_id|not found/.test(e.message));
  await assert.rejects(client.responses.create({ model: MODEL, input: 'x', tool_choice: 'required' }),
    (e) => e.status === 400 && /tool_choice/.test(e.message));
});
