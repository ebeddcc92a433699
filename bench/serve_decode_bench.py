#!/usr/bin/env python3
"""Streaming decode through `llmhost serve` at several concurrencies (issue 14;
stdlib only, so it runs on the GPU machine, which has Python but no Node).

For each concurrency C: C streaming /v1/completions at once, each a random
prompt of its own (--prompt-tokens ids, 16 by default) (no shared prefix), greedy (or
--temperature T with --top-p P: each stream seeded by its index), ignore_eos, max_tokens M,
stream_options.include_usage. Per stream: TTFT (its first chunk with text)
and its completion tokens (usage). Figures:
  generated tok/s  sum(completion tokens) / (last end - first start)
  decode tok/s     text chunks (a token each, but for bytes held back for a
                   whole character) that arrive while every stream runs
                   (from the last first chunk to the first end), per second;
                   n/a where that window is empty
  TTFT             median and worst over the C streams
The model is loaded and warmed (one request of the same prompt length, so that
the decode steps' device graphs exist) before the first timed run.

Usage: serve_decode_bench.py LLMHOST MODELS_DIR [--model ID] [--device cuda]
                             [--concurrency 1,8,32,128] [--max-tokens 64] [--prompt-tokens 16]
                             [--temperature 0] [--top-p 1] [--extra "serve flags"]
"""
import argparse
import json
import random
import statistics
import sys
import threading
import time
import urllib.request

from serve_process import running_server


def stream(url, model, ids, max_tokens, sampling):
    """One streaming completion: (start, first-token time, end, completion tokens, text chunks' times)."""
    body = {"model": model, "prompt": ids, "max_tokens": max_tokens, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True}}
    body.update(sampling)
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    first, tokens, arrivals = None, 0, []
    with urllib.request.urlopen(req, timeout=3600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            # The first chunk with text (an opening chunk may come before the prefill ends).
            if any(c.get("text") for c in chunk.get("choices", [])):
                arrivals.append(time.perf_counter())
                if first is None:
                    first = arrivals[-1]
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
    end = time.perf_counter()
    return t0, first if first is not None else end, end, tokens, arrivals


def run(url, model, concurrency, max_tokens, vocab, seed, prompt_tokens=16, temperature=0.0, top_p=1.0):
    rng = random.Random(seed)
    prompts = [[rng.randrange(3, vocab - 3) for _ in range(prompt_tokens)] for _ in range(concurrency)]
    results = [None] * concurrency
    errors = []

    def one(i):
        try:
            sampling = {"temperature": temperature}
            if temperature > 0:
                sampling.update({"top_p": top_p, "seed": seed * 1000 + i})
            results[i] = stream(url, model, prompts[i], max_tokens, sampling)
        except Exception as e:  # reported below: a failed stream fails the run
            errors.append(repr(e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        sys.exit("serve_decode_bench: %d of %d streams failed: %s" % (len(errors), concurrency, errors[0]))
    start = min(r[0] for r in results)
    first = max(r[1] for r in results)
    end = max(r[2] for r in results)
    first_end = min(r[2] for r in results)
    in_window = sum(1 for r in results for t in r[4] if first < t <= first_end)
    tokens = sum(r[3] for r in results)
    ttft = sorted(r[1] - r[0] for r in results)
    if any(r[3] != max_tokens for r in results):
        sys.exit("serve_decode_bench: a stream ended early: %s" % [r[3] for r in results])
    return {
        "concurrency": concurrency,
        "generated_tok_s": tokens / (end - start),
        "decode_tok_s": in_window / (first_end - first) if first_end > first else None,
        "ttft_median_s": statistics.median(ttft),
        "ttft_max_s": ttft[-1],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("models_dir", help="serve's --model-dir: a folder of models or a random-weights spec")
    ap.add_argument("--model", default=None, help="model id (default: the first listed)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--concurrency", default="1,8,32,128")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-tokens", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--extra", default="")
    a = ap.parse_args()
    levels = [int(c) for c in a.concurrency.split(",") if c]
    with running_server(a.binary, a.models_dir, a.device, ["--max-concurrent-requests", str(max(levels))], a.extra,
                        "serve_decode_bench") as url:
        with urllib.request.urlopen(url + "/v1/models", timeout=60) as r:
            ids = [x["id"] for x in json.loads(r.read())["data"]]
        model = a.model or ids[0]
        # Loads the model and warms its kernels, at the timed prompts' length: the
        # device graphs of that context bucket are recorded before the timing.
        run(url, model, 1, 4, a.vocab, 0, a.prompt_tokens, a.temperature, a.top_p)
        print("serve_decode_bench: %s on %s, %d tokens per stream, %d-token prompts, %s"
              % (model, a.device, a.max_tokens, a.prompt_tokens,
                 "greedy" if a.temperature <= 0 else "temperature %g, top_p %g" % (a.temperature, a.top_p)))
        print("| streams | generated tok/s | decode tok/s | TTFT median / max ms |")
        print("|---|---|---|---|")
        for i, c in enumerate(levels):
            r = run(url, model, c, a.max_tokens, a.vocab, 100 + i, a.prompt_tokens, a.temperature, a.top_p)
            decode = "n/a" if r["decode_tok_s"] is None else "%.1f" % r["decode_tok_s"]
            print("| %d | %.1f | %s | %.0f / %.0f |" % (c, r["generated_tok_s"], decode,
                                                   1000 * r["ttft_median_s"], 1000 * r["ttft_max_s"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
