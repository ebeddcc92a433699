#!/usr/bin/env python3
"""Inter-token gaps of a running stream while another request restores a
long prefix from the SSD tier (issue 12; run by bench/run_restore_gap_bench.sh).

1. `llmhost serve` (write-back) prefills an N-token prompt P (random ids), so
   that its blocks are saved; SIGTERM flushes them to the SSD tier; the block
   files' pages are dropped from the page cache (posix_fadvise DONTNEED).
2. A new server on the same cache dir; the model is loaded; a stream S starts
   (a 16-token prompt, `--decode-tokens` tokens, ignore_eos) and every SSE
   chunk's arrival time is recorded.
3. Once S has produced `--lead` tokens, P is sent again: its blocks come from
   the files while S keeps decoding.
4. The gaps between S's tokens: the median over the whole stream, the
   longest while P was in flight, and their ratio (the goal: under 2).

Usage: restore_gap_bench.py LLMHOST MODELS_DIR --model NAME [--tokens 8192] [--work DIR [--reuse]]
"""
import argparse
import json
import os
import random
import shutil
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kv_tier_bench as kvb  # noqa: E402  (Server, block_files, drop_pages)


def stream_tokens(url, model, ids, n, times, started):
    body = json.dumps({"model": model, "prompt": ids, "max_tokens": n, "temperature": 0, "ignore_eos": True,
                       "stream": True}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("choices") and chunk["choices"][0].get("text"):
                times.append(time.perf_counter())
                started.set()


def wait_store_ready(srv, model, timeout_s=600):
    """Until the model's weights are hashed (the store keys need them) and what it indexed is saved."""
    for _ in range(int(timeout_s * 10)):
        _, j = kvb.http(srv.url + "/api/status")
        for m in j.get("models", []):
            if m.get("id") == model and (m.get("kv") or {}).get("store_ready"):
                time.sleep(0.5)  # the catch-up save runs on the executor's next poll
                return
        time.sleep(0.1)
    sys.exit("restore_gap_bench: the block store never became ready")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("models_dir")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--decode-tokens", type=int, default=300)
    ap.add_argument("--lead", type=int, default=40)
    ap.add_argument("--work", default=None)
    ap.add_argument("--extra", default="")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the blocks an earlier run left in --work (skips the cold prefill)")
    args = ap.parse_args()
    work = args.work or kvb.tempfile.mkdtemp(prefix="llmhost-restore-gap-")
    home = os.path.join(work, "home")
    cache = os.path.join(home, "cache")
    reuse = args.reuse and args.work and kvb.block_files(cache)
    if not reuse:
        shutil.rmtree(home, ignore_errors=True)
        os.makedirs(home)
    extra = ["--cache-dir", cache] + (args.extra.split() if args.extra else [])
    rnd = random.Random(5)
    prompt = [rnd.randrange(10, 30000) for _ in range(args.tokens)]
    short = [rnd.randrange(10, 30000) for _ in range(16)]

    cold = None
    if not reuse:
        srv = kvb.Server(args.binary, home, args.models_dir, extra)
        srv.admin(args.model, "load")
        cold, _, _ = srv.complete(args.model, prompt)
        kvb.log(f"cold prefill of {args.tokens} tokens: {cold:.2f} s")
        wait_store_ready(srv, args.model)
        srv.stop()
    files = kvb.block_files(cache)
    if not files:
        sys.exit("restore_gap_bench: no block was saved")
    kvb.drop_pages(files)
    kvb.log(f"{len(files)} block files flushed and dropped from the page cache")

    srv = kvb.Server(args.binary, home, args.models_dir, extra)
    srv.admin(args.model, "load")
    times = []
    started = threading.Event()
    th = threading.Thread(target=stream_tokens, args=(srv.url, args.model, short, args.decode_tokens, times, started))
    th.start()
    started.wait(600)
    while len(times) < args.lead:
        time.sleep(0.005)
    r0 = time.perf_counter()
    ttft, ptoks, cached = srv.complete(args.model, prompt)
    r1 = time.perf_counter()
    th.join()
    srv.stop()
    if cached == 0:
        sys.exit("restore_gap_bench: the second prompt restored nothing")
    gaps = [b - a for a, b in zip(times, times[1:])]
    during = [b - a for a, b in zip(times, times[1:]) if b > r0 and a < r1]
    # Each gap beside the restore: (its start after P was sent, its length), ms.
    timeline = [(round((a - r0) * 1e3, 1), round((b - a) * 1e3, 1))
                for a, b in zip(times, times[1:]) if b > r0 and a < r1]
    median = statistics.median(gaps)
    worst = max(during) if during else 0.0
    out = {"prompt_tokens": ptoks, "cached_tokens": cached, "restore_request_s": round(ttft, 3),
           "stream_tokens": len(times), "median_gap_ms": round(median * 1e3, 2),
           "max_gap_during_restore_ms": round(worst * 1e3, 2), "ratio": round(worst / median, 2),
           "cold_prefill_s": round(cold, 2) if cold else None,
           "timeline_ms": timeline, "response_after_ms": round((r1 - r0) * 1e3, 1),
           "gaps_over_2x_median": sum(1 for g in during if g > 2 * median), "gaps_during_restore": len(during), "load_avg": kvb.loadavg()}
    print(json.dumps(out, indent=1))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
