#!/usr/bin/env python3
"""What `n` choices sharing one prefill save: one request with n=4 against four
concurrent requests with the same prompt (each prefills it: none is in the
prefix cache yet), on a real `llmhost serve`.

  bench/choices_bench.py BUILD/llmhost MODEL_DIR MODEL_ID [--prompt-tokens 1024] [--choices 4] [--max-tokens 16]

MODEL_DIR holds MODEL_ID (e.g. the Llama-1B shape of bench/run_model_bench.sh:
a folder with a link llama1b-mlx4 -> $TMPDIR/llmhost-bench-models/llama1b-mlx4).
Prints both wall times and their ratio; the SSD/hot tiers are off (--cache-mode off).
"""
import argparse
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model_dir")
    ap.add_argument("model")
    ap.add_argument("--prompt-tokens", type=int, default=1024)
    ap.add_argument("--choices", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=16)
    a = ap.parse_args()
    port = free_port()
    home = tempfile.mkdtemp(prefix="llmhost-choices-")
    log = open(os.path.join(home, "serve.log"), "w")
    srv = subprocess.Popen([a.binary, "serve", "--model-dir", a.model_dir, "--port", str(port), "--home", home,
                            "--cache-mode", "off"], stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"

    def post(body):
        req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=900) as r:
            return json.loads(r.read())

    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/health", timeout=1)
                break
            except OSError:
                time.sleep(0.2)

        def prompt(seed):  # distinct prompts per phase: nothing cached between them
            return [1 + (seed * 7919 + i * 104729) % 31000 for i in range(a.prompt_tokens)]

        post({"model": a.model, "prompt": prompt(0)[:16], "max_tokens": 1})  # loads the model
        base = {"model": a.model, "max_tokens": a.max_tokens, "temperature": 1.0, "ignore_eos": True}
        t0 = time.time()
        r = post({**base, "prompt": prompt(1), "n": a.choices, "seed": 5})
        t_n = time.time() - t0
        assert len(r["choices"]) == a.choices, r
        assert r["usage"]["completion_tokens"] == a.choices * a.max_tokens, r["usage"]
        out = [None] * a.choices

        def one(i):
            out[i] = post({**base, "prompt": prompt(2), "seed": 5 + i})

        t0 = time.time()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(a.choices)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        t_sep = time.time() - t0
        assert all(o and len(o["choices"]) == 1 for o in out), out
        print(f"{a.model}: {a.prompt_tokens}-token prompt, {a.choices} x {a.max_tokens} tokens: "
              f"n={a.choices} in one request {t_n:.2f} s; {a.choices} concurrent requests {t_sep:.2f} s; "
              f"ratio {t_sep / t_n:.2f}x")
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
