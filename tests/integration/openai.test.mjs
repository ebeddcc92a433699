// The official `openai` SDK against `llmhost serve`: chat (streaming and
// not, tools, usage), completions, errors as the SDK's typed exceptions,
// 16 parallel streams with the same greedy tokens as one alone, and a
// client that hangs up mid-stream (the engine's pool is whole afterwards).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, fixtures, engineStatus, waitFor, http } from './harness.mjs';

const KEY = 'sk-it-openai';
const MODEL = 'qwen3-tiny';
let server;
let client;

before(async () => {
  server = await startServer(['--model-dir', fixtures, '--api-key', KEY]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
});

const messages = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'What is 2+2?' },
];
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];

async function streamText(params, options) {
  const stream = await client.chat.completions.create({ ...params, stream: true }, options);
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (c?.delta?.content) text += c.delta.content;
    if (c?.finish_reason) finish = c.finish_reason;
  }
  return { text, usage, finish };
}

test('models are listed', async () => {
  const list = await client.models.list();
  const ids = list.data.map((m) => m.id);
  assert.ok(ids.includes(MODEL), ids.join(','));
  assert.ok(ids.includes('llama-tiny-gguf/llama-tiny-q4_0'));
});

test('chat: non-streaming, usage, tools rendered, streaming matches', async () => {
  const params = { model: MODEL, messages, max_tokens: 12, temperature: 0 };
  const r = await client.chat.completions.create(params);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 12);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');

  // The tools go through the chat template: the prompt grows by their schema.
  const withTools = await client.chat.completions.create({ ...params, tools, max_tokens: 1 });
  assert.ok(withTools.usage.prompt_tokens > r.usage.prompt_tokens + 10,
    `${withTools.usage.prompt_tokens} vs ${r.usage.prompt_tokens}`);

  const s = await streamText({ ...params, stream_options: { include_usage: true } });
  assert.equal(s.text, r.choices[0].message.content);
  assert.equal(s.finish, r.choices[0].finish_reason);
  assert.equal(s.usage.completion_tokens, r.usage.completion_tokens);
  assert.equal(s.usage.prompt_tokens, r.usage.prompt_tokens);
});

test('chat: assistant tool_calls and tool messages are accepted', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, max_tokens: 2, temperature: 0, tools,
    messages: [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '21 C' },
      { role: 'system', content: 'A late system message.' },
    ],
  });
  assert.ok(r.usage.prompt_tokens > 0);
});

test('chat: logprobs and seed', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, messages, max_tokens: 4, temperature: 0.8, seed: 7, logprobs: true, top_logprobs: 3,
  });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  for (const t of lp) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 3);
  }
  const again = await client.chat.completions.create({
    model: MODEL, messages, max_tokens: 4, temperature: 0.8, seed: 7,
  });
  assert.equal(again.choices[0].message.content, r.choices[0].message.content, 'same seed, same tokens');
});

test('chat: n choices, each its own seeded sample, streamed by index', async () => {
  const params = { model: MODEL, messages, max_tokens: 5, temperature: 1.0, seed: 11 };
  const r = await client.chat.completions.create({ ...params, n: 3 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  assert.equal(r.usage.completion_tokens, 15);
  for (let i = 0; i < 3; i++) {
    const alone = await client.chat.completions.create({ ...params, seed: 11 + i });
    assert.equal(r.choices[i].message.content, alone.choices[0].message.content, `choice ${i}`);
  }
  const stream = await client.chat.completions.create({ ...params, n: 3, stream: true });
  const texts = ['', '', ''];
  for await (const chunk of stream) {
    for (const c of chunk.choices) texts[c.index] += c.delta?.content ?? '';
  }
  assert.deepEqual(texts, r.choices.map((c) => c.message.content));
  await assert.rejects(client.chat.completions.create({ ...params, n: 17 }), (e) => e.status === 400 && /'n'/.test(e.message));
});

test('completions: text and token-id prompts', async () => {
  const a = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 5, temperature: 0 });
  assert.equal(a.object, 'text_completion');
  assert.equal(typeof a.choices[0].text, 'string');
  const b = await client.completions.create({ model: MODEL, prompt: [1, 2, 3], max_tokens: 3, temperature: 0 });
  assert.equal(b.usage.prompt_tokens, 3);
});

test('errors are the SDK typed errors', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages, max_tokens: 1 }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && /qwen3-tiny/.test(e.message));
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [], max_tokens: 1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages');
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages, max_tokens: -1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'max_tokens');
  const bad = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  const health = await http(`${server.url}/health`);
  assert.equal(health.status, 200, 'health is open');
});

test('16 parallel streams give the same greedy tokens as one alone', async () => {
  const params = { model: MODEL, messages, max_tokens: 24, temperature: 0, ignore_eos: true };
  const alone = await streamText(params);
  assert.ok(alone.text.length > 0);
  const all = await Promise.all(Array.from({ length: 16 }, () => streamText(params)));
  for (const r of all) assert.equal(r.text, alone.text);
});

test('a client that hangs up mid-stream: the engine frees its blocks', async () => {
  const headers = { authorization: `Bearer ${KEY}` };
  const before = await engineStatus(server.url, MODEL, headers);
  const controller = new AbortController();
  const stream = await client.chat.completions.create(
    { model: MODEL, messages, max_tokens: 3000, temperature: 0, ignore_eos: true, stream: true },
    { signal: controller.signal });
  let chunks = 0;
  try {
    for await (const _ of stream) {
      if (++chunks === 3) {
        controller.abort();  // the SDK closes the connection
        break;
      }
    }
  } catch {
    // an abort error, depending on the SDK version
  }
  assert.equal(chunks, 3);
  const st = await waitFor(async () => {
    const s = await engineStatus(server.url, MODEL, headers);
    return s.running === 0 && s.waiting === 0 && s.kv.blocks_used === 0 ? s : null;
  }, 'the engine to release the hung-up request');
  assert.equal(st.aborted, (before?.aborted ?? 0) + 1);
  assert.ok(st.generated_tokens - (before?.generated_tokens ?? 0) < 3000, 'the request was cut short');
});
