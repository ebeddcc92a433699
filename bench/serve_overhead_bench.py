#!/usr/bin/env python3
"""The server's own time per request (issue 14): what `llmhost serve` adds to
the model's work for one request (stdlib only, so it runs on the GPU machine).

One client, one keep-alive connection, requests one after another, greedy,
ignore_eos, non-streaming unless named:
  completions K  /v1/completions, a one-token prompt (token ids: no template,
                 no tokenizer), max_tokens K
  chat K         /v1/chat/completions, one short user message (the chat
                 template and the tokenizer run), max_tokens K
  stream 1       completions 1 with stream: true (SSE framing, usage chunk)
K = 1 and K = 2 alternate, so that drift hits both alike; each figure is the
median (and p90) over --requests requests of its kind, after a warm-up.
On a model whose forward pass costs next to nothing (hidden 64, 2 layers: a
random-weights spec such as random:llama:bf16:tiny.json:1), completions 1 is
the server's own time for a request: HTTP, JSON, the pool's lease and prefill
check, admission, the executor's hand-offs, the event relay, the response.
completions 2 - completions 1 is one decode step and its token's event;
chat 1 - completions 1 adds the template, the tokenizer and a longer prompt.
On a real model completions 1 also holds a one-token prefill, which is not a
decode step's cost (the prompt path takes other kernels), so no overhead is
derived there.

Usage: serve_overhead_bench.py LLMHOST MODELS_DIR [--model ID] [--device cpu]
                               [--requests 200] [--extra "serve flags"]
"""
import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse

from serve_process import running_server


class Client:
    """One keep-alive connection."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)

    def post(self, path, body, stream=False):
        """Seconds from sending to the last byte of the answer; raises on an error status."""
        data = json.dumps(body).encode()
        t0 = time.perf_counter()
        self.conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        raw = r.read()
        t1 = time.perf_counter()
        if r.status != 200:
            raise RuntimeError("%s: HTTP %d: %s" % (path, r.status, raw[:300]))
        if not stream:
            usage = json.loads(raw).get("usage", {})
            if usage.get("completion_tokens") != body["max_tokens"]:
                raise RuntimeError("%s: %s completion tokens, asked %d" % (path, usage.get("completion_tokens"),
                                                                          body["max_tokens"]))
        return t1 - t0


def completions(model, k, stream=False):
    body = {"model": model, "prompt": [1000], "max_tokens": k, "temperature": 0, "ignore_eos": True}
    if stream:
        body.update({"stream": True, "stream_options": {"include_usage": True}})
    return "/v1/completions", body, stream


def chat(model, k):
    body = {"model": model, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": k,
            "temperature": 0, "ignore_eos": True}
    return "/v1/chat/completions", body, False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("models_dir", help="serve's --model-dir: a folder of models or a random-weights spec")
    ap.add_argument("--model", default=None, help="model id (default: the first listed)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--extra", default="")
    a = ap.parse_args()
    with running_server(a.binary, a.models_dir, a.device, extra=a.extra, name="serve_overhead_bench") as url:
        c = Client(url)
        c.conn.request("GET", "/v1/models")
        model = a.model or json.loads(c.conn.getresponse().read())["data"][0]["id"]
        kinds = {
            "completions 1": completions(model, 1),
            "completions 2": completions(model, 2),
            "chat 1": chat(model, 1),
            "chat 2": chat(model, 2),
            "stream 1": completions(model, 1, stream=True),
        }
        for _ in range(10):  # loads the model, warms its kernels and the connection
            for path, body, stream in kinds.values():
                c.post(path, body, stream)
        times = {k: [] for k in kinds}
        for _ in range(a.requests):
            for k, (path, body, stream) in kinds.items():
                times[k].append(c.post(path, body, stream))
        med = {k: statistics.median(v) for k, v in times.items()}
        p90 = {k: sorted(v)[int(0.9 * (len(v) - 1))] for k, v in times.items()}
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
        print("serve_overhead_bench: %s on %s, %d requests of each kind, one keep-alive connection, load %s"
              % (model, a.device, a.requests, load))
        print("| request | median ms | p90 ms |")
        print("|---|---|---|")
        for k in kinds:
            print("| %s | %.3f | %.3f |" % (k, 1e3 * med[k], 1e3 * p90[k]))
        print("completions 2 - 1 (a decode step and its event): %.3f ms; chat 1 - completions 1 (template, "
              "tokenizer, a longer prompt): %.3f ms"
              % (1e3 * (med["completions 2"] - med["completions 1"]), 1e3 * (med["chat 1"] - med["completions 1"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
