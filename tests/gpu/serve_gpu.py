#!/usr/bin/env python3
"""`llmhost serve --device cuda` on a GPU machine, driven as a client would.

Runs where there is a GPU and Python 3 (no Node.js needed; standard library
only). Checks, against a real server on 127.0.0.1:
  1. every fixture model (tests/data/models) answers chat and completion
     requests, streamed and not, with max_tokens tokens; the same request
     twice gives the same text and the second reuses the prompt's KV blocks;
  2. 8 concurrent requests each get the text they get alone (batch
     invariance through the server);
  3. /api/status reports the GPU's budget (the served GPU, found by its PCI location): the loaded models' bytes are
     committed there, not in the host's; a prompt's blocks saved to the SSD
     tier come back into the GPU after a restart;
  4. a swap under --gpu-memory-guard-gb: three synthetic models that do not
     fit together; every request served, never more than two loaded, the
     GPU's committed bytes under its ceiling.

  python3 tests/gpu/serve_gpu.py --binary build/llmhost [--device cuda]
Exits 0 when every check passes; prints one line per check.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


class Server:
    def __init__(self, binary, model_dir, device, extra=(), home=None, cache_mode="hot-only"):
        self.home = home or tempfile.mkdtemp(prefix="llmhost-gpu-")
        self.log = open(os.path.join(self.home, "serve.log"), "a+")
        args = [binary, "serve", "--port", "0", "--home", self.home, "--model-dir", model_dir,
                "--device", device, "--cache-mode", cache_mode, "--block-size", "16", *extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://[\d.]+:\d+)", line)
        if not m:
            self.log.seek(0)
            raise RuntimeError("serve did not start: %r\n%s" % (line, self.log.read()[-3000:]))
        self.url = m.group(1)

    def post(self, path, body, timeout=300):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            raise RuntimeError("%s %s: %d %s" % (path, body.get("model"), e.code, e.read().decode()[:300]))

    def put(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="PUT",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read().decode())

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=60) as r:
            return json.loads(r.read().decode())

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.seek(0)
        return self.log.read()


RAW = set()  # models without a chat template: raw prompts to /v1/completions


def chat(srv, model, text, n=8, stream=False):
    body = {"model": model, "max_tokens": n, "temperature": 0, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if model in RAW:
        path, body["prompt"] = "/v1/completions", text
    else:
        path, body["messages"] = "/v1/chat/completions", [{"role": "user", "content": text}]
    status, raw = srv.post(path, body)
    if not stream:
        c = json.loads(raw)["choices"][0]
        return c["message"]["content"] if "message" in c else c["text"], json.loads(raw)["usage"], c["finish_reason"]
    content, usage, finish = "", None, None
    for line in raw.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        for c in ev.get("choices", []):
            content += c.get("delta", {}).get("content") or c.get("text") or ""
            finish = c.get("finish_reason") or finish
        usage = ev.get("usage") or usage
    return content, usage, finish


def fixtures_dir():
    d = tempfile.mkdtemp(prefix="llmhost-gpu-models-")
    src = os.path.join(ROOT, "tests", "data", "models")
    for name in sorted(os.listdir(src)):
        if name == "golden":
            continue
        p = os.path.join(src, name)
        if os.path.isdir(p) and os.path.exists(os.path.join(p, "config.json")):
            shutil.copytree(p, os.path.join(d, name))
        elif os.path.isdir(p):  # a folder of GGUF files
            for f in os.listdir(p):
                if f.endswith(".gguf"):
                    shutil.copy(os.path.join(p, f), d)
    return d


def serve_fixtures(binary, device):
    models = fixtures_dir()
    srv = Server(binary, models, device)
    try:
        ids = [m["id"] for m in srv.get("/v1/models")["data"]]
        check(len(ids) >= 10, "fixtures discovered: %d" % len(ids))
        for mid in ids:
            if mid.endswith(".gguf") or "q4_0" in mid:
                RAW.add(mid)
            text, usage, finish = chat(srv, mid, "Tell me a story about a dragon and a knight.", n=8)
            again, usage2, _ = chat(srv, mid, "Tell me a story about a dragon and a knight.", n=8, stream=True)
            cached = ((usage2 or {}).get("prompt_tokens_details") or {}).get("cached_tokens", 0)
            check(usage["completion_tokens"] == 8 and finish == "length" and text == again and cached > 0,
                  "%s: 8 tokens, the same text streamed (cached prompt tokens %s)" % (mid, cached))
        status = srv.get("/api/status")
        mem = status["memory"]
        dev = mem.get("device") or {}
        check(dev.get("committed_bytes", 0) > 0 and mem.get("committed_bytes", 1) < dev.get("committed_bytes", 0),
              "GPU budget: committed %.1f MiB on the GPU, %.1f MiB on the host"
              % (dev.get("committed_bytes", 0) / 2**20, mem.get("committed_bytes", 0) / 2**20))
        budgeted = [g for g in mem.get("gpus", []) if g.get("budgeted")]
        check(len(budgeted) == 1 and budgeted[0]["index"] == dev.get("gpu") and "pci_bus_id" in budgeted[0],
              "GPU budget: reads the served GPU (%s)" % (budgeted[0] if budgeted else mem.get("gpus")))
        devs = mem.get("devices") or []
        check(len(devs) == len([g for g in mem.get("gpus", [])]) and devs and devs[0] == dev,
              "GPU budgets: one per GPU (%d), the first also as memory.device" % len(devs))
        on = [m for m in status.get("models", []) if m.get("loaded")]
        check(on and all(m.get("gpu") in [d["cuda_index"] for d in devs] for m in on),
              "loaded models say their GPU (%s)" % sorted({str(m.get("gpu")) for m in on}))
        # Batch invariance through the server: 8 prompts alone, then together.
        mid = "llama3-tiny" if "llama3-tiny" in ids else ids[0]
        prompts = ["Question %d: what is %d plus %d? Answer at length." % (i, i, 7 * i) for i in range(8)]
        alone = [chat(srv, mid, p, n=16)[0] for p in prompts]
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            together = list(ex.map(lambda p: chat(srv, mid, p, n=16)[0], prompts))
        check(alone == together, "%s: 8 concurrent requests each equal their text alone" % mid)
    finally:
        log = srv.stop()
    check("compute on cuda" in log or "on cuda:" in log, "serve says the models compute on the GPU")


def restart_restore(binary, device):
    """A prompt's blocks saved to the SSD tier by a GPU engine come back into a GPU engine after a restart."""
    d = tempfile.mkdtemp(prefix="llmhost-gpu-restart-")
    shutil.copytree(os.path.join(ROOT, "tests", "data", "models", "llama3-tiny"), os.path.join(d, "llama3-tiny"))
    home = tempfile.mkdtemp(prefix="llmhost-gpu-home-")
    prompt = " ".join("word%d" % i for i in range(120))
    srv = Server(binary, d, device, home=home, cache_mode="write-through")
    try:
        first, _, _ = chat(srv, "llama3-tiny", prompt, n=8)
    finally:
        srv.stop()
    srv = Server(binary, d, device, home=home, cache_mode="write-through")
    try:
        again, usage, _ = chat(srv, "llama3-tiny", prompt, n=8)
    finally:
        srv.stop()
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    check(again == first and cached >= 16,
          "restart: the prompt's blocks restored from the SSD tier (%d of %d prompt tokens cached), the same text"
          % (cached, usage["prompt_tokens"]))


def swap(binary, device):
    d = tempfile.mkdtemp(prefix="llmhost-gpu-swap-")
    cfg = json.dumps({"hidden_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 8,
                      "num_key_value_heads": 8, "intermediate_size": 4096, "vocab_size": 32000,
                      "max_position_embeddings": 4096})
    for i in range(3):
        subprocess.run([binary, "synth-model", "--arch", "llama", "--config", cfg, "--dtype", "bf16", "--seed",
                        str(i), "--out", os.path.join(d, "m%d" % i)], check=True, capture_output=True)
    one = sum(os.path.getsize(os.path.join(d, "m0", f)) for f in os.listdir(os.path.join(d, "m0"))
              if f.endswith(".safetensors"))
    ceiling_gb = 3.0 * one / 2**30  # two fit under its soft target, three do not
    srv = Server(binary, d, device, ["--gpu-memory-guard-gb", "%.3f" % ceiling_gb])
    most, over, served = 0, 0, 0
    try:
        base = srv.get("/api/status")["memory"]["footprint_bytes"]
        for r in range(2):
            for i in range(3):
                text, usage, _ = chat(srv, "m%d" % i, "hello", n=4)
                served += usage["completion_tokens"] == 4
                st = srv.get("/api/status")
                loaded = sum(1 for m in st.get("models", []) if m.get("loaded"))
                most = max(most, loaded)
                dev = st["memory"].get("device") or {}
                over += dev.get("committed_bytes", 0) > dev.get("ceiling_bytes", 0)
        grown = srv.get("/api/status")["memory"]["footprint_bytes"] - base
        check(grown < one, "host footprint after 6 GPU loads grew %.0f MiB (a model's weights: %.0f MiB): "
              "the files' pages are not kept" % (grown / 2**20, one / 2**20))
        # A model's device setting: on the CPU beside the GPU's models, back on the GPU, a GPU not served.
        srv.put("/admin/api/models/m0/settings", {"device": "cpu"})
        chat(srv, "m0", "hello", n=4)
        st = srv.get("/api/status")
        m0 = [m for m in st["models"] if m["id"] == "m0"][0]
        check(m0["loaded"] and m0.get("gpu") is None and st["memory"]["committed_bytes"] >= one,
              "device setting cpu: m0 on the host (gpu %s, host committed %.0f MiB)"
              % (m0.get("gpu"), st["memory"]["committed_bytes"] / 2**20))
        srv.put("/admin/api/models/m0/settings", {"device": "cuda:0"})
        chat(srv, "m0", "hello", n=4)
        m0 = [m for m in srv.get("/api/status")["models"] if m["id"] == "m0"][0]
        check(m0["loaded"] and m0.get("gpu") == 0, "device setting cuda:0: m0 back on GPU %s" % m0.get("gpu"))
        srv.put("/admin/api/models/m1/settings", {"device": "cuda:7"})
        try:
            chat(srv, "m1", "hello", n=4)
            check(False, "device setting cuda:7 (not served): refused")
        except RuntimeError as e:
            check("cuda:7" in str(e), "device setting cuda:7 (not served): refused (%s)" % str(e)[:160])
    finally:
        srv.stop()
    check(served == 6 and most == 2 and over == 0,
          "swap under a %.2f GiB GPU ceiling (a model: %.0f MiB): %d/6 served, at most %d loaded, %d readings over"
          % (ceiling_gb, one / 2**20, served, most, over))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "llmhost"))
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    t0 = time.time()
    serve_fixtures(a.binary, a.device)
    restart_restore(a.binary, a.device)
    swap(a.binary, a.device)
    print("%d failed, %.0f s" % (len(FAILURES), time.time() - t0))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
