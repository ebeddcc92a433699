#!/usr/bin/env python3
"""A model's whole context window is served (issue 12, scenario 1).

The KV cache used to be a fixed 2 GiB pool in f32, and the context window was
cut to fit it: Qwen3-8B's KV layout (36 layers, 8 KV heads x 128) got 7,168
of its 40,960 positions. Now the cache reserves address space for the full
contexts and claims memory as prompts need it.

Model: synth-model qwen3 with 36 layers and 32 KV heads x 128 (4x Qwen3-8B's
KV per token: the old rule would have cut it at 1,792 positions, and a
prompt just past that stays cheap on 2 cores), max_position_embeddings 40960.

Asserts: /v1/models/status shows max_context_window 40960; a 1,900-token
prompt (past the old cut) is answered; the KV cache grew past its 1K-token
floor to hold it (kv_cache_bytes in /api/status), within its reservation.

Usage: long_context.py LLMHOST_BINARY [--work DIR]
Exit 0 on success, 1 on a failed check.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmhost_http import http  # noqa: E402

SHAPE = {"hidden_size": 64, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 32,
         "head_dim": 128, "intermediate_size": 64, "vocab_size": 4000, "max_position_embeddings": 40960}
OLD_CUT = 1792  # 2 GiB of f32 K/V at 36 x 4096 x 8 bytes a token, in blocks of 256
PROMPT = 1900


def fail(msg):
    print("long_context: FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="llmhost-long-context-")
    shutil.rmtree(work, ignore_errors=True)
    model = os.path.join(work, "models", "long-ctx")
    r = subprocess.run([args.binary, "synth-model", "--arch", "qwen3", "--dtype", "bf16", "--out", model,
                        "--config", json.dumps(SHAPE)], capture_output=True, text=True)
    if r.returncode != 0:
        fail("synth-model: " + r.stderr)
    home = os.path.join(work, "home")
    os.makedirs(home)
    log = open(os.path.join(home, "serve.log"), "w")
    proc = subprocess.Popen([args.binary, "serve", "--home", home, "--model-dir", os.path.join(work, "models"),
                             "--port", "0", "--cache-mode", "off"], stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        m = re.search(r"listening on (http://\S+)", proc.stdout.readline())
        if not m:
            fail("the server did not start")
        url = m.group(1)
        _, st = http(url + "/v1/models/status")
        ctx = st["models"][0].get("max_context_window")
        if ctx != SHAPE["max_position_embeddings"]:
            fail(f"max_context_window {ctx}, want the model's {SHAPE['max_position_embeddings']}")
        ids = [(i * 7919) % 3990 + 5 for i in range(PROMPT)]
        t0 = time.time()
        status, j = http(url + "/v1/completions", {"model": "long-ctx", "prompt": ids, "max_tokens": 2,
                                                   "temperature": 0, "ignore_eos": True}, timeout=1200)
        secs = time.time() - t0
        if status != 200:
            fail(f"a {PROMPT}-token prompt (the old cut was {OLD_CUT}): {status} {j}")
        if j["usage"]["prompt_tokens"] != PROMPT:
            fail(f"prompt_tokens {j['usage']['prompt_tokens']}")
        _, s = http(url + "/api/status")
        eng = s["models"][0]
        per_token = 2 * SHAPE["num_hidden_layers"] * SHAPE["num_key_value_heads"] * SHAPE["head_dim"] * 2  # bf16
        if eng["kv_dtype"] != "bf16" or eng["kv_cache_bytes"] < PROMPT * per_token:
            fail(f"the KV cache holds {eng['kv_cache_bytes']} bytes ({eng['kv_dtype']}), "
                 f"want >= {PROMPT * per_token} for the prompt")
        if eng["kv_max_bytes"] < eng["kv_cache_bytes"]:
            fail(f"kv_max_bytes {eng['kv_max_bytes']} < kv_cache_bytes {eng['kv_cache_bytes']}")
        print(json.dumps({"max_context_window": ctx, "prompt_tokens": PROMPT, "old_cut": OLD_CUT,
                          "seconds": round(secs, 1), "kv_cache_bytes": eng["kv_cache_bytes"],
                          "kv_max_bytes": eng["kv_max_bytes"]}, indent=1))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print("long_context: ok", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
