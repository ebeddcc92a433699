// The official `@anthropic-ai/sdk` against `llmhost serve` (/v1/messages:
// streaming and not, tools, stop sequences, usage, count_tokens, errors),
// and the real Claude Code requests of ../shared/clients replayed with
// their captured headers against the qwen3-realtok-tiny fixture.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { startServer, fixtures, sharedDir, parseSse, http } from './harness.mjs';

const KEY = 'sk-local-test';  // the key in the captured Claude Code headers
const MODEL = 'qwen3-tiny';
let server;
let client;

before(async () => {
  const dirs = ['--model-dir', fixtures];
  if (sharedDir) dirs.push('--model-dir', path.join(sharedDir, 'reference', 'models'));
  server = await startServer([...dirs, '--api-key', KEY]);
  client = new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
});

const tools = [{
  name: 'get_weather',
  description: 'Get the current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}];

test('messages: non-streaming with usage', async () => {
  const m = await client.messages.create({
    model: MODEL, max_tokens: 8, temperature: 0,
    system: 'You are a helpful assistant.',
    messages: [{ role: 'user', content: 'What is 2+2?' }],
  });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.content[0].type, 'text');
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
  assert.ok(m.usage.input_tokens > 0);
  assert.equal(typeof m.usage.cache_read_input_tokens, 'number');
  assert.ok(m.usage.output_tokens > 0 && m.usage.output_tokens <= 8);
});

test('messages: streaming events, text equals the non-streamed answer', async () => {
  const params = {
    model: MODEL, max_tokens: 12, temperature: 0, tools,
    system: [{ type: 'text', text: 'Be brief.' }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '21 C, sunny' }] },
    ],
  };
  const plain = await client.messages.create(params);
  const stream = client.messages.stream(params);
  const types = [];
  stream.on('streamEvent', (e) => types.push(e.type));
  const final = await stream.finalMessage();
  assert.equal(final.content[0].text, plain.content[0].text);
  assert.equal(final.stop_reason, plain.stop_reason);
  assert.equal(final.usage.output_tokens, plain.usage.output_tokens);
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  assert.ok(types.includes('content_block_start') && types.includes('content_block_stop'));
  assert.ok(types.includes('message_delta'));
});

test('messages: stop_sequences and count_tokens', async () => {
  const base = { model: MODEL, messages: [{ role: 'user', content: 'Hello' }] };
  const full = await client.messages.create({ ...base, max_tokens: 6, temperature: 0 });
  const text = full.content[0].text;
  if (text.length > 2) {
    const stop = text.slice(1, 3);
    const cut = await client.messages.create({ ...base, max_tokens: 6, temperature: 0, stop_sequences: [stop] });
    assert.equal(cut.stop_reason, 'stop_sequence');
    assert.equal(cut.stop_sequence, stop);
    assert.ok(!cut.content[0].text.includes(stop));
  }
  const count = await client.messages.countTokens(base);
  assert.equal(count.input_tokens, full.usage.input_tokens + full.usage.cache_read_input_tokens);
  const withTools = await client.messages.countTokens({ ...base, tools });
  assert.ok(withTools.input_tokens > count.input_tokens + 10, 'tools are rendered into the prompt');
});

test('errors in Anthropic shape', async () => {
  await assert.rejects(
    client.messages.create({ model: 'no-such', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.NotFoundError && e.error?.type === 'error' && e.error?.error?.type === 'not_found_error');
  await assert.rejects(
    client.messages.create({ model: MODEL, max_tokens: 4, messages: [] }),
    (e) => e instanceof Anthropic.BadRequestError && e.error?.error?.type === 'invalid_request_error');
  const bad = new Anthropic({ baseURL: server.url, apiKey: 'nope', maxRetries: 0 });
  await assert.rejects(bad.messages.create({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.AuthenticationError);
});

// Claude Code's own requests, headers and bodies as captured, with the model
// name replaced and max_tokens lowered from 32000 (a random tiny model never
// stops by itself).
test('Claude Code requests replay against qwen3-realtok-tiny', { skip: !sharedDir && 'no ../shared' }, async () => {
  const dir = path.join(sharedDir, 'clients', 'claude-code-2.1.197');
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  assert.ok(files.length >= 3);
  for (const f of files) {
    const cap = JSON.parse(readFileSync(path.join(dir, f), 'utf8'));
    const body = { ...cap.body, model: 'qwen3-realtok-tiny', max_tokens: 16 };
    const headers = {};
    for (const [k, v] of Object.entries(cap.headers)) {
      if (!['host', 'content-length', 'connection', 'accept-encoding'].includes(k.toLowerCase())) headers[k] = v;
    }
    const r = await http(`${server.url}${cap.path}`, 'POST', body, headers);
    assert.equal(r.status, 200, `${f}: ${r.text.slice(0, 500)}`);
    assert.match(r.headers.get('content-type'), /text\/event-stream/);
    const events = parseSse(r.text);
    const names = events.map((e) => e.event).filter((e) => e !== 'ping' && e !== ':');
    assert.deepEqual(names.slice(0, 2), ['message_start', 'content_block_start'], f);
    assert.deepEqual(names.slice(-3), ['content_block_stop', 'message_delta', 'message_stop'], f);
    for (const e of events) if (e.data) JSON.parse(e.data);  // every data line is JSON
    const start = JSON.parse(events.find((e) => e.event === 'message_start').data).message;
    const prompt = start.usage.input_tokens + start.usage.cache_read_input_tokens;
    // The 24 tools (~60 KB of schemas) are rendered: compare with the same request without them.
    const count = await http(`${server.url}/v1/messages/count_tokens`, 'POST', body, headers);
    assert.equal(count.json.input_tokens, prompt, f);
    const noTools = await http(`${server.url}/v1/messages/count_tokens`, 'POST', { ...body, tools: [] }, headers);
    assert.ok(prompt - noTools.json.input_tokens > 5000, `${f}: tools add ${prompt - noTools.json.input_tokens} tokens`);
    const delta = JSON.parse(events.find((e) => e.event === 'message_delta').data);
    assert.ok(['end_turn', 'max_tokens', 'stop_sequence'].includes(delta.delta.stop_reason));
  }
});

test('keep-alive comes first in a stream (chunk mode: event ping)', async () => {
  const r = await http(`${server.url}/v1/messages`, 'POST',
    { model: MODEL, max_tokens: 2, stream: true, messages: [{ role: 'user', content: 'x' }] }, { 'x-api-key': KEY });
  const events = parseSse(r.text);
  assert.equal(events[0].event, 'ping');
  assert.equal(r.headers.get('cache-control'), 'no-cache');
  assert.equal(r.headers.get('x-accel-buffering'), 'no');
});
