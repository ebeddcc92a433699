// Embeddings and reranking against a real `llmhost serve`: qwen3-tiny
// (tests/data/models) three times over, made an embedder, a reranker and a
// chat model by its settings (<home>/model_settings.json, and the admin
// settings API for a bad kind). The official `openai` client's
// embeddings.create (float, base64, dimensions, batches, token ids, usage),
// rerank over plain fetch on its three paths (sorted, top_n,
// return_documents, 400s), the `ollama` client's embed (truncate), the
// errors of a model asked for the wrong kind, and the metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { Ollama } from 'ollama';
import { fixtures, http, startServer } from './harness.mjs';

const EMBED = 'qwen-embed';
const RERANK = 'qwen-rerank';
const CHAT = 'qwen-chat';
const DIM = 64;  // qwen3-tiny's hidden size
let dir;
let server;
let openai;
let ollama;

// A model folder of its own (so that its settings are its own) whose files link to qwen3-tiny's.
function linkModel(name) {
  const src = path.join(fixtures, 'qwen3-tiny');
  const dst = path.join(dir, 'models', name);
  mkdirSync(dst, { recursive: true });
  for (const f of readdirSync(src)) symlinkSync(path.join(src, f), path.join(dst, f));
}

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const near = (a, b, tol, what) => {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}: [${i}] ${a[i]} vs ${b[i]}`);
};

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-embed-'));
  for (const name of [EMBED, RERANK, CHAT]) linkModel(name);
  const home = path.join(dir, 'home');
  mkdirSync(home);
  writeFileSync(path.join(home, 'model_settings.json'), JSON.stringify({
    models: {
      [EMBED]: { kind: 'embedding', instruction: 'Find the answer' },
      [RERANK]: { kind: 'rerank' },
    },
  }));
  server = await startServer(['--model-dir', path.join(dir, 'models')], {}, home);
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused' });
  ollama = new Ollama({ host: server.url });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

test('openai embeddings: float and base64 agree, unit length, usage', async () => {
  const float = await openai.embeddings.create({ model: EMBED, input: 'The capital of France is Paris.', encoding_format: 'float' });
  assert.equal(float.object, 'list');
  assert.equal(float.model, EMBED);
  assert.equal(float.data.length, 1);
  assert.equal(float.data[0].object, 'embedding');
  assert.equal(float.data[0].index, 0);
  const v = float.data[0].embedding;
  assert.equal(v.length, DIM);
  assert.ok(Math.abs(norm(v) - 1) < 1e-5, `norm ${norm(v)}`);
  assert.ok(float.usage.prompt_tokens > 3, JSON.stringify(float.usage));
  assert.equal(float.usage.total_tokens, float.usage.prompt_tokens);

  // The client's default asks for base64 and decodes it: the same floats.
  const decoded = await openai.embeddings.create({ model: EMBED, input: 'The capital of France is Paris.' });
  near(decoded.data[0].embedding, v, 0, 'base64 decoded by the client');
  // Raw base64: little-endian f32.
  const raw = await openai.embeddings.create({ model: EMBED, input: 'The capital of France is Paris.', encoding_format: 'base64' });
  const bytes = Buffer.from(raw.data[0].embedding, 'base64');
  assert.equal(bytes.length, DIM * 4);
  const floats = Array.from({ length: DIM }, (_, i) => bytes.readFloatLE(4 * i));
  near(floats, v, 0, 'raw base64');
});

test('openai embeddings: a batch, token ids, dimensions, queries with the instruction', async () => {
  const texts = ['alpha beta', 'The capital of France is Paris.', 'def add(a, b): return a + b'];
  const batch = await openai.embeddings.create({ model: EMBED, input: texts, encoding_format: 'float' });
  assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2]);
  let tokens = 0;
  for (let i = 0; i < texts.length; i++) {
    const alone = await openai.embeddings.create({ model: EMBED, input: texts[i], encoding_format: 'float' });
    near(batch.data[i].embedding, alone.data[0].embedding, 1e-5, `input ${i} alone and batched`);
    tokens += alone.usage.prompt_tokens;
  }
  assert.equal(batch.usage.prompt_tokens, tokens);
  assert.notDeepEqual(batch.data[0].embedding, batch.data[1].embedding);

  const ids = await openai.embeddings.create({ model: EMBED, input: [[10, 20, 30], [40, 50]], encoding_format: 'float' });
  assert.equal(ids.data.length, 2);
  assert.equal(ids.usage.prompt_tokens, 5);
  const one = await openai.embeddings.create({ model: EMBED, input: [10, 20, 30], encoding_format: 'float' });
  near(one.data[0].embedding, ids.data[0].embedding, 1e-5, 'a list of ids alone');

  const full = batch.data[1].embedding;
  const cut = await openai.embeddings.create({ model: EMBED, input: texts[1], dimensions: 16, encoding_format: 'float' });
  const v = cut.data[0].embedding;
  assert.equal(v.length, 16);
  const head = full.slice(0, 16);
  near(v, head.map((x) => x / norm(head)), 1e-6, 'truncated, then renormalized');

  const query = await http(`${server.url}/v1/embeddings`, 'POST', { model: EMBED, input: texts[1], input_type: 'query' });
  assert.equal(query.status, 200, query.text);
  assert.ok(query.json.usage.prompt_tokens > cut.usage.prompt_tokens, 'the instruction prefix is embedded too');

  await assert.rejects(openai.embeddings.create({ model: EMBED, input: 'x', dimensions: DIM + 1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'dimensions' && /64/.test(e.message));
  await assert.rejects(openai.embeddings.create({ model: EMBED, input: ['ok', ''] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'input[1]');
  await assert.rejects(openai.embeddings.create({ model: EMBED, input: 'word '.repeat(5000) }),
    (e) => e instanceof OpenAI.BadRequestError && /input\[0\].*context of 4096/.test(e.message));
  await assert.rejects(openai.embeddings.create({ model: EMBED, input: [[1, 2, 100000]] }),
    (e) => e instanceof OpenAI.BadRequestError && /vocabulary/.test(e.message));
});

test('rerank: sorted scores, top_n, return_documents, on every path', async () => {
  const documents = ['Paris is the capital of France.', { text: 'Bananas are yellow.' }, 'The Eiffel Tower is in Paris.'];
  const all = await http(`${server.url}/v1/rerank`, 'POST', { model: RERANK, query: 'capital of France', documents });
  assert.equal(all.status, 200, all.text);
  const results = all.json.results;
  assert.equal(results.length, 3);
  assert.deepEqual(results.map((r) => r.index).sort(), [0, 1, 2]);
  for (let i = 0; i < results.length; i++) {
    assert.ok(results[i].relevance_score > 0 && results[i].relevance_score < 1, JSON.stringify(results[i]));
    if (i > 0) assert.ok(results[i - 1].relevance_score >= results[i].relevance_score, 'sorted by score');
    assert.equal(results[i].document, undefined, 'documents only when asked');
  }
  assert.equal(all.json.model, RERANK);
  assert.ok(all.json.usage.total_tokens > 0, JSON.stringify(all.json.usage));

  for (const route of ['/rerank', '/v2/rerank']) {
    const top = await http(`${server.url}${route}`, 'POST',
      { model: RERANK, query: 'capital of France', documents, top_n: 2, return_documents: true });
    assert.equal(top.status, 200, top.text);
    assert.equal(top.json.results.length, 2);
    for (let i = 0; i < 2; i++) {
      const r = top.json.results[i];
      assert.equal(r.index, results[i].index, route);
      assert.ok(Math.abs(r.relevance_score - results[i].relevance_score) < 1e-6, route);
      const doc = documents[r.index];
      assert.equal(r.document.text, typeof doc === 'string' ? doc : doc.text);
    }
  }

  for (const [body, param] of [[{ model: RERANK, documents }, 'query'],
    [{ model: RERANK, query: 'q', documents: [] }, 'documents'],
    [{ model: RERANK, query: 'q', documents: ['a', 3] }, 'documents[1]'],
    [{ model: RERANK, query: 'q', documents: ['a'], top_n: 0 }, 'top_n']]) {
    const r = await http(`${server.url}/v1/rerank`, 'POST', body);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, param, r.text);
  }
});

test('ollama embed: one input or many, truncate', async () => {
  const one = await ollama.embed({ model: EMBED, input: 'The capital of France is Paris.' });
  assert.equal(one.model, EMBED);
  assert.equal(one.embeddings.length, 1);
  assert.equal(one.embeddings[0].length, DIM);
  assert.ok(one.prompt_eval_count > 3);
  assert.ok(one.total_duration > 0 && one.load_duration >= 0);
  const ref = await openai.embeddings.create({ model: EMBED, input: 'The capital of France is Paris.', encoding_format: 'float' });
  near(one.embeddings[0], ref.data[0].embedding, 1e-6, 'the same vector on both APIs');

  const many = await ollama.embed({ model: EMBED, input: ['a', 'b'], dimensions: 8 });
  assert.equal(many.embeddings.length, 2);
  assert.equal(many.embeddings[1].length, 8);

  assert.deepEqual((await ollama.show({ model: EMBED })).capabilities, ['embedding']);
  assert.ok((await ollama.show({ model: CHAT })).capabilities.includes('completion'));

  const long = 'word '.repeat(5000);
  const cut = await ollama.embed({ model: EMBED, input: long });
  assert.equal(cut.prompt_eval_count, 4096, 'truncated to the context');
  await assert.rejects(ollama.embed({ model: EMBED, input: long, truncate: false }), /context of 4096/);
});

test("ollama embeddings (the older route): one prompt's vector; an empty prompt only loads", async () => {
  const one = await ollama.embeddings({ model: EMBED, prompt: 'The capital of France is Paris.' });
  const ref = await ollama.embed({ model: EMBED, input: 'The capital of France is Paris.' });
  near(one.embedding, ref.embeddings[0], 1e-6, 'the same vector as /api/embed');
  assert.deepEqual((await ollama.embeddings({ model: EMBED, prompt: '' })).embedding, []);
  // Ollama's options do not apply to embeddings: accepted as Ollama does; an unknown one is refused.
  near((await ollama.embeddings({ model: EMBED, prompt: 'The capital of France is Paris.', options: { temperature: 0.2 } }))
    .embedding, ref.embeddings[0], 1e-6, 'options change nothing');
  await assert.rejects(ollama.embeddings({ model: EMBED, prompt: 'x', options: { temprature: 0.2 } }),
    /'options.temprature' is not an option llmhost knows/);
  await assert.rejects(ollama.embeddings({ model: CHAT, prompt: 'x' }), /is a chat model/);
});

test('a model asked for the wrong kind answers 400 saying which kind it is', async () => {
  await assert.rejects(openai.embeddings.create({ model: CHAT, input: 'x' }),
    (e) => e instanceof OpenAI.BadRequestError && /is a chat model, not an embedding model/.test(e.message));
  const status = await http(`${server.url}/v1/models/status`);
  const chatState = (status.json.data || status.json.models || []).find((m) => m.id === CHAT);
  assert.ok(chatState, status.text);
  assert.equal(chatState.loaded, false, 'refused by its settings before it loads');
  await assert.rejects(openai.embeddings.create({ model: RERANK, input: 'x' }),
    (e) => e instanceof OpenAI.BadRequestError && /is a rerank model/.test(e.message));
  await assert.rejects(openai.chat.completions.create({ model: EMBED, messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e instanceof OpenAI.BadRequestError && /is an embedding model, not a chat model/.test(e.message));
  const rerankEmbedder = await http(`${server.url}/v1/rerank`, 'POST', { model: EMBED, query: 'q', documents: ['a'] });
  assert.equal(rerankEmbedder.status, 400);
  assert.match(rerankEmbedder.json.error.message, /is an embedding model, not a rerank model/);
  await assert.rejects(ollama.embed({ model: CHAT, input: 'x' }), /is a chat model/);
  await assert.rejects(ollama.chat({ model: RERANK, messages: [{ role: 'user', content: 'hi' }] }), /is a rerank model/);
  // The chat model still chats.
  const chat = await openai.chat.completions.create({ model: CHAT, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
  assert.equal(chat.choices.length, 1);

  const bench = await http(`${server.url}/admin/api/bench`, 'POST', { model: EMBED });
  assert.equal(bench.status, 400, bench.text);
  assert.equal(bench.json.error.code, 'wrong_model_kind', bench.text);

  const bad = await http(`${server.url}/admin/api/models/${CHAT}/settings`, 'PUT', { kind: 'embeddings' });
  assert.equal(bad.status, 400, bad.text);
  assert.match(bad.json.error.message, /kind.*chat, embedding or rerank/);
});

test('metrics count the routes and the embedding requests', async () => {
  const m = await http(`${server.url}/metrics`);
  assert.match(m.text, /llmhost_http_responses_total\{route="\/v1\/embeddings",status="200"\} \d+/);
  assert.match(m.text, /llmhost_http_responses_total\{route="\/v1\/rerank",status="400"\} \d+/);
  assert.match(m.text, /llmhost_http_responses_total\{route="\/api\/embed",status="200"\} \d+/);
  assert.match(m.text, new RegExp(`llmhost_embedding_requests_total\\{model="${EMBED}",kind="embedding"\\} \\d+`));
  assert.match(m.text, new RegExp(`llmhost_embedding_inputs_total\\{model="${RERANK}",kind="rerank"\\} \\d+`));
  assert.match(m.text, /llmhost_embedding_request_seconds_count\{model="qwen-embed",kind="embedding"\} \d+/);
});
