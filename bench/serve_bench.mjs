// Serving benchmark for issue 4: a load generator over Node's built-in http
// module (no dependencies) against a running `llmhost serve`.
//
//   node bench/serve_bench.mjs --url http://127.0.0.1:PORT --model llama1b-mlx4 \
//       --tiny-model qwen3-tiny [--pid SERVER_PID] [--max-tokens 64] [--concurrency 1,4,8]
//       [--overhead-requests 300] [--prefix-repeats 1] [--vocab 32000]
//
// Phases:
//  1. decode: C streaming /v1/completions at once, each a 16-id random prompt
//     (distinct per stream: no shared prefix), greedy, ignore_eos, fixed
//     max_tokens, logprobs 1 (so every token is its own SSE chunk even when
//     its text is an incomplete UTF-8 piece). Aggregate decode tok/s =
//     sum(tokens - 1) / (last end - first first-token); TTFT per stream.
//  2. prefix: TTFT of a 2,048-id prompt cold, then of a prompt sharing its
//     first 1,792 ids (7 of 8 blocks of 256) with a new last block; usage's
//     cached_tokens is checked. Also an exact repeat (only the last token runs).
//  3. overhead: sequential keep-alive requests to the tiny model: GET /health
//     (HTTP only), POST /v1/messages/count_tokens (parse + template +
//     tokenize), POST /v1/chat/completions max_tokens 1 (all of it plus one
//     forward of a 2-layer, hidden-64 model), and /v1/completions with the
//     same prompt as ids (no template, no tokenize). Latency seen by the
//     client, and the server's CPU time per request from /proc/PID/stat
//     (all its threads; insensitive to other load on a shared machine).
import http from 'node:http';
import { readFileSync } from 'node:fs';

const args = {
  url: null, model: 'llama1b-mlx4', 'tiny-model': 'qwen3-tiny', pid: null,
  'max-tokens': '64', concurrency: '1,4,8', 'overhead-requests': '300',
  'prefix-repeats': '1', vocab: '32000',
};
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  if (!(k in args)) throw new Error(`unknown flag --${k}`);
  args[k] = process.argv[i + 1];
}
if (!args.url) throw new Error('--url is required');
const base = new URL(args.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const now = () => performance.now();  // ms

// Deterministic ids in [1000, vocab - 1000) (away from the byte and special
// tokens; a tiny vocab: [10, vocab - 10)).
function randomIds(n, seed) {
  const vocab = Number(args.vocab);
  const lo = vocab >= 4000 ? 1000 : 10;
  let x = (seed * 2654435761) >>> 0 || 1;
  const out = [];
  for (let i = 0; i < n; ++i) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    out.push(lo + (x % (vocab - 2 * lo)));
  }
  return out;
}

function request(method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({
      host: base.hostname, port: base.port, method, path, agent,
      headers: data === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
        else resolve(text);
      });
    });
    req.on('error', reject);
    if (data !== undefined) req.write(data);
    req.end();
  });
}

// One streaming /v1/completions; returns {start, first, end, tokens, usage}.
function stream(body) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } });
    const r = { start: now(), first: null, end: null, tokens: 0, usage: null };
    let buf = '';
    const req = http.request({
      host: base.hostname, port: base.port, method: 'POST', path: '/v1/completions', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
    }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
          const j = JSON.parse(ev.slice(6));
          if (j.error) return reject(new Error(JSON.stringify(j.error)));
          if (j.usage) r.usage = j.usage;
          for (const c of j.choices || []) {
            const n = c.logprobs && c.logprobs.tokens ? c.logprobs.tokens.length : 0;
            if (n > 0 && r.first === null) r.first = now();
            r.tokens += n;
          }
        }
      });
      res.on('end', () => {
        r.end = now();
        if (res.statusCode !== 200) reject(new Error(`completions: ${res.statusCode} ${buf}`));
        else resolve(r);
      });
    });
    req.on('error', reject);
    req.write(data);
    req.end();
  });
}

const gen = (prompt, maxTokens) => ({
  model: args.model, prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, logprobs: 1,
});

// utime + stime of the server (all threads), ms.
function serverCpuMs() {
  if (!args.pid) return null;
  const f = readFileSync(`/proc/${args.pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;  // fields 14, 15; USER_HZ 100
}

const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(s.length * p))]; };

async function main() {
  const maxTokens = Number(args['max-tokens']);
  console.log(`serve_bench: ${args.url} model ${args.model}, tiny ${args['tiny-model']}`);

  // Load the model (mmap + engine) outside every measurement.
  let t = now();
  await stream(gen(randomIds(8, 999), 2));
  console.log(`model load + first request: ${f1(now() - t)} ms`);

  console.log(`\n== decode: ${maxTokens} tokens per stream, 16-id prompts, greedy, ignore_eos ==`);
  console.log('concurrency | aggregate decode tok/s | per-stream tok/s | TTFT mean / max ms | wall s');
  const decode = {};
  for (const c of args.concurrency.split(',').map(Number)) {
    const rs = await Promise.all(Array.from({ length: c }, (_, i) => stream(gen(randomIds(16, 100 * c + i), maxTokens))));
    for (const r of rs) {
      if (r.tokens !== maxTokens) throw new Error(`stream got ${r.tokens} tokens, wanted ${maxTokens}`);
    }
    const firstMin = Math.min(...rs.map((r) => r.first));
    const endMax = Math.max(...rs.map((r) => r.end));
    const agg = rs.reduce((s, r) => s + r.tokens - 1, 0) / ((endMax - firstMin) / 1000);
    const per = rs.reduce((s, r) => s + (r.tokens - 1) / ((r.end - r.first) / 1000), 0) / c;
    const ttft = rs.map((r) => r.first - r.start);
    const wall = (endMax - Math.min(...rs.map((r) => r.start))) / 1000;
    decode[c] = agg;
    console.log(`${c} | ${f1(agg)} | ${f1(per)} | ${f1(ttft.reduce((a, b) => a + b) / c)} / ${f1(Math.max(...ttft))} | ${f2(wall)}`);
  }
  const cs = Object.keys(decode).map(Number);
  if (cs.length > 1) {
    console.log(`scaling vs concurrency ${cs[0]}: ` + cs.slice(1).map((c) => `${c}: ${f2(decode[c] / decode[cs[0]])}x`).join(', '));
  }

  console.log('\n== prefix: TTFT of a 2,048-id prompt, cold vs 1,792 ids cached (block 256) ==');
  const reps = Number(args['prefix-repeats']);
  const cold = [], warm = [], exact = [];
  for (let k = 0; k < reps; ++k) {
    const a = randomIds(2048, 7000 + k);
    const rc = await stream(gen(a, 1));
    const b = a.slice(0, 1792).concat(randomIds(256, 8000 + k));
    const rw = await stream(gen(b, 1));
    const re = await stream(gen(a, 1));
    for (const [name, r, want] of [['cold', rc, 0], ['prefix', rw, 1792], ['exact', re, 2048]]) {
      const got = r.usage.prompt_tokens_details ? r.usage.prompt_tokens_details.cached_tokens : undefined;
      const ttft = r.first - r.start;
      console.log(`${name}: TTFT ${f1(ttft)} ms, prompt_tokens ${r.usage.prompt_tokens}, cached_tokens ${got}` +
                  (name !== 'exact' && got !== want ? ` (expected ${want})` : ''));
    }
    cold.push(rc.first - rc.start); warm.push(rw.first - rw.start); exact.push(re.first - re.start);
  }
  const coldM = median(cold), warmM = median(warm);
  console.log(`cold / 1,792-cached TTFT: ${f1(coldM)} / ${f1(warmM)} ms = ${f2(coldM / warmM)}x faster (goal >= 5x); ` +
              `exact repeat ${f1(median(exact))} ms (${f1(coldM / median(exact))}x)`);

  const n = Number(args['overhead-requests']);
  const tiny = args['tiny-model'];
  const messages = [{ role: 'system', content: 'You are a helpful assistant.' },
                    { role: 'user', content: 'What is the capital of France? Answer in one word.' }];
  const count = JSON.parse(await request('POST', '/v1/messages/count_tokens',
                                         { model: tiny, system: messages[0].content, messages: [messages[1]] }));
  const chat = { model: tiny, messages, max_tokens: 1, temperature: 0 };
  const chatResp = JSON.parse(await request('POST', '/v1/chat/completions', chat));
  const promptTokens = chatResp.usage.prompt_tokens;
  // The same number of prompt ids, no template or tokenizer; ids in the tiny vocab.
  const vocab = 900;
  const ids = Array.from({ length: promptTokens }, (_, i) => 10 + ((i * 37) % (vocab - 20)));
  const kinds = [
    ['GET /health (HTTP only)', () => request('GET', '/health')],
    ['POST count_tokens (parse+template+tokenize)', () => request('POST', '/v1/messages/count_tokens',
      { model: tiny, system: messages[0].content, messages: [messages[1]] })],
    [`POST chat/completions max_tokens 1 (${promptTokens} prompt tokens)`, () => request('POST', '/v1/chat/completions', chat)],
    [`POST completions ids max_tokens 1 (${promptTokens} ids)`, () => request('POST', '/v1/completions',
      { model: tiny, prompt: ids, max_tokens: 1, temperature: 0 })],
    ['POST completions 1 id max_tokens 1', () => request('POST', '/v1/completions',
      { model: tiny, prompt: [ids[0]], max_tokens: 1, temperature: 0 })],
  ];
  console.log(`\n== overhead: ${n} sequential keep-alive requests each, model ${tiny} ` +
              `(count_tokens says ${count.input_tokens} tokens) ==`);
  console.log('request | latency median / p10 / p90 ms | server CPU ms/request');
  const cpu = {};
  for (const [name, fn] of kinds) {
    for (let i = 0; i < 20; ++i) await fn();  // warm
    const lat = [];
    const c0 = serverCpuMs();
    for (let i = 0; i < n; ++i) {
      const s = now();
      await fn();
      lat.push(now() - s);
    }
    const c1 = serverCpuMs();
    cpu[name] = c0 === null ? null : (c1 - c0) / n;
    console.log(`${name} | ${f2(median(lat))} / ${f2(pct(lat, 0.1))} / ${f2(pct(lat, 0.9))} | ` +
                (c0 === null ? 'n/a' : f2(cpu[name])));
  }
  if (args.pid) {
    const c0 = serverCpuMs();
    await new Promise((r) => setTimeout(r, 2000));
    console.log(`server CPU while idle: ${f1((serverCpuMs() - c0) / 2)} ms/s (no polling if ~0)`);
  }
  agent.destroy();
}

main().catch((e) => { console.error('serve_bench:', e.message); agent.destroy(); process.exit(1); });
