// Encoder models through the HTTP APIs of a real `llmhost serve` (f32, the
// golden's precision): bert-tiny-embed (BERT, CLS pooling, normalized) with
// the official `openai` client's embeddings.create, its vectors against the
// transformers golden; xlmr-tiny-rerank (an XLM-RoBERTa sequence
// classifier) through /v1/rerank, its scores against the golden's logits and
// sorted; and both refusing to chat. Fixtures: tests/data/encoders (copies
// of ../shared's, with their goldens).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { http, startServer } from './harness.mjs';

const encoders = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'data', 'encoders');
let dir;
let server;
let openai;

// The F32 tensors of a safetensors file, by name.
function readSafetensors(file) {
  const b = readFileSync(file);
  const n = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__' || t.dtype !== 'F32') continue;
    const [s, e] = t.data_offsets;
    const raw = b.subarray(8 + n + s, 8 + n + e);
    out[name] = Array.from(new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)));
  }
  return out;
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmhost-encoders-'));
  mkdirSync(path.join(dir, 'models'));
  for (const name of ['bert-tiny-embed', 'xlmr-tiny-rerank']) {
    symlinkSync(path.join(encoders, name), path.join(dir, 'models', name));
  }
  server = await startServer(['--model-dir', path.join(dir, 'models'), '--precision', 'f32']);
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused' });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'serve exits 0 on SIGTERM: ' + server.stderr);
  rmSync(dir, { recursive: true, force: true });
});

test('bert: embeddings.create gives the golden CLS vectors, normalized', async () => {
  const golden = JSON.parse(readFileSync(path.join(encoders, 'golden', 'bert-tiny-embed.json'), 'utf8'));
  const tensors = readSafetensors(path.join(encoders, 'golden', 'bert-tiny-embed.safetensors'));
  // The golden's empty sentence is left out: the API refuses an empty input.
  const sentences = golden.sentences.map((s, i) => ({ ...s, i })).filter((s) => s.text !== '');
  const r = await openai.embeddings.create({ model: 'bert-tiny-embed', input: sentences.map((s) => s.text) });
  assert.equal(r.data.length, sentences.length);
  let tokens = 0;
  for (const [k, s] of sentences.entries()) {
    const want = tensors[`s${s.i}.cls_normalized`];
    const got = r.data[k].embedding;
    assert.equal(r.data[k].index, k);
    assert.equal(got.length, want.length);
    let err = 0, ref = 0;
    for (let j = 0; j < want.length; j++) {
      err += (got[j] - want[j]) ** 2;
      ref += want[j] ** 2;
    }
    assert.ok(Math.sqrt(err / ref) <= 1e-4, `sentence ${s.i}: relative error ${Math.sqrt(err / ref)}`);
    tokens += s.input_ids.length;
  }
  assert.equal(r.usage.prompt_tokens, tokens, 'usage counts the golden token ids, [CLS] and [SEP] included');
  // Alone, a sentence gives the vector it gave in the batch.
  const alone = await openai.embeddings.create({ model: 'bert-tiny-embed', input: sentences[1].text });
  assert.deepEqual(alone.data[0].embedding, r.data[1].embedding);
});

test('xlm-r: /v1/rerank scores are the golden logits, most relevant first', async () => {
  const golden = JSON.parse(readFileSync(path.join(encoders, 'golden', 'xlmr-tiny-rerank.json'), 'utf8'));
  const documents = golden.pairs.map((p) => p.document);
  const r = await http(`${server.url}/v1/rerank`, 'POST',
    { model: 'xlmr-tiny-rerank', query: golden.query, documents, return_documents: true });
  assert.equal(r.status, 200, r.text);
  const results = r.json.results;
  assert.equal(results.length, documents.length);
  for (let k = 1; k < results.length; k++) {
    assert.ok(results[k - 1].relevance_score >= results[k].relevance_score, 'sorted by relevance_score');
  }
  for (const res of results) {
    const want = golden.pairs[res.index].score;
    assert.ok(Math.abs(res.relevance_score - want) <= 1e-4 * Math.abs(want), `document ${res.index}: ${res.relevance_score} vs ${want}`);
    assert.equal(res.document.text, documents[res.index]);
  }
  const top = await http(`${server.url}/rerank`, 'POST',
    { model: 'xlmr-tiny-rerank', query: golden.query, documents, top_n: 1 });
  assert.equal(top.status, 200, top.text);
  assert.deepEqual(top.json.results.map((x) => x.index), [results[0].index]);
  // A query over the model's context (512 positions) is refused as such, before any pair.
  const long = await http(`${server.url}/v1/rerank`, 'POST',
    { model: 'xlmr-tiny-rerank', query: 'memory '.repeat(600), documents });
  assert.equal(long.status, 400, long.text);
  assert.match(long.text, /'query' is \d+ tokens, more than the model's context of 512/);
});

test('encoders refuse the other routes with the kind they are', async () => {
  const chat = await http(`${server.url}/v1/chat/completions`, 'POST',
    { model: 'bert-tiny-embed', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  assert.equal(chat.status, 400, chat.text);
  assert.match(chat.text, /embedding model/);
  const embed = await http(`${server.url}/v1/embeddings`, 'POST', { model: 'xlmr-tiny-rerank', input: 'hello' });
  assert.equal(embed.status, 400, embed.text);
  assert.match(embed.text, /rerank model/);
});

test('models.list shows what each model serves, loaded or not', async () => {
  const kinds = async () => {
    const list = await openai.models.list();
    return Object.fromEntries(list.data.map((m) => [m.id, m.kind]));
  };
  assert.deepEqual(await kinds(), { 'bert-tiny-embed': 'embedding', 'xlmr-tiny-rerank': 'rerank' });
  const unload = await http(`${server.url}/v1/models/xlmr-tiny-rerank/unload`, 'POST', {});
  assert.equal(unload.status, 200, unload.text);
  assert.deepEqual(await kinds(), { 'bert-tiny-embed': 'embedding', 'xlmr-tiny-rerank': 'rerank' });
  // An unloaded reranker asked to embed is refused without loading it.
  const embed = await http(`${server.url}/v1/embeddings`, 'POST', { model: 'xlmr-tiny-rerank', input: 'hello' });
  assert.equal(embed.status, 400, embed.text);
  assert.match(embed.text, /is a rerank model/);
  const status = JSON.parse((await http(`${server.url}/api/status`)).text);
  const xlmr = status.models.find((m) => m.id === 'xlmr-tiny-rerank');
  assert.equal(xlmr.kind, 'rerank');
  assert.equal(xlmr.loaded, false, 'the refused request did not load it');
  assert.equal(status.models.find((m) => m.id === 'bert-tiny-embed').kind, 'embedding');
});
