#!/usr/bin/env python3
"""The tiered KV block cache of `llmhost serve` end to end (issue 6's proof).

Model: tests/data/models/qwen3-tiny (its own small BPE tokenizer and Qwen3
chat template; prefill of thousands of tokens takes well under a second), KV
blocks of 16 tokens (--block-size 16), so short prompts make many block files.
Every scenario has its own --home and cache dir under --work. Every answer is
greedy (temperature 0, ignore_eos, max_tokens 8) and compared with the answer
of a server without a block store (--cache-mode off) for the same prompt.

1. restart     a chat prompt of >= 3,000 tokens; SIGTERM (exit 0: dirty hot
               blocks flushed); a new server on the same cache dir answers the
               same prompt with cached_tokens >= all its full blocks and the
               same text; a third server with --cache-mode off: cached 0, same text.
2. crash       many distinct prompts in parallel (write-through, SSD cap below
               the traffic), kill -9 mid-way; every block file left behind is
               checked here (SHA-256); a restart deletes the temp files,
               counts errors only for corrupt files, rebuilds the index (files,
               bytes), keeps the cap and gives the cold answers.
3. corruption  after a clean run and SIGTERM: flip a byte in one block file's
               data, truncate another, delete a third; restart, delete a fourth
               (known to the rebuilt index); the cold answers, cache.errors
               counts the flipped, truncated and missing files, and every file
               left on disk is valid.
4. cap         ~4x the SSD cap written in distinct prompts: the block files on
               disk (sampled throughout and after every request) never exceed
               the cap, /api/status agrees, ssd.evictions > 0; a restart with a
               smaller cap shrinks the cache at start.
5. admin       write-back keeps blocks in RAM only, and they outlive an unload
               of the model (the next request restores them from the hot tier);
               their RAM shows in memory.cache_bytes; clear-hot sends them to
               the SSD (returns the count), clear-ssd
               deletes every file.
6. modes       hot-only (RAM only, a % of RAM), write-back under a 64 KiB hot
               tier (evicted dirty blocks written, the rest at SIGINT), flags
               from the environment and settings.json, and a block size change
               (the other layout's files kept, never matched).
8. split       the model split over 2 ranks (--tensor-parallel 2 on CPU
               stand-ins): a restart on the same cache restores every full
               block (each holds both ranks' K/V shards) and answers as before;
               an unsplit server on that cache matches none of them (the block
               keys carry the layout: cached 0).
7. weights     a synthesized 4 MB model: blocks saved, restored after a
               restart; then 12 embedding rows that lie outside the 16 windows
               the sampled identity reads are negated in place (same size), and
               a restart on the same cache restores nothing (cached 0) and
               answers as a cold server on the new weights does.

Usage: kv_tiers.py LLMHOST_BINARY [--model DIR] [--work DIR] [--keep] [--only A,B] [--device cuda]
(--device cuda runs every scenario with the KV blocks in GPU memory.)
Exit 0 on success, 1 on a failed check, 77 when skipped (not Linux).
No timing assertions: waits poll /api/status with generous deadlines.
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmhost_http import http  # noqa: E402

BLOCK = 16
MODEL = "qwen3-tiny"
MAX_TOKENS = 8
WORDS = ("the of and to in is was for on that with as by at from his her an which be this are or "
         "had it not but have were they one all their has been more when who will no if out so said "
         "what up its about into than them can only other new some could time these two may then do "
         "first any my now such like our over man me even most made after also did many before must "
         "through back years where much your way well down should because each just those people how "
         "too little state good very make world still own see men work long get here between both life "
         "being under never day same another know while last might us great old year off come since "
         "against go came right used take three").split()


def fail(msg):
    print("kv_tiers: FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


def note(msg):
    print("kv_tiers: " + msg, file=sys.stderr, flush=True)


LIVE = []  # servers to kill if a check fails
SERVE_EXTRA = []  # flags every server gets (--device)


def kill_live():
    for srv in LIVE:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()


class Server:
    def __init__(self, binary, models_dir, home, extra, name, env=None):
        os.makedirs(home, exist_ok=True)
        self.name = name
        self.log_path = os.path.join(home, f"serve-{name}.log")
        self.log = open(self.log_path, "w")
        cmd = [binary, "serve", "--home", home, "--model-dir", models_dir, "--port", "0",
               "--block-size", str(BLOCK), "--max-concurrent-requests", "4"] + SERVE_EXTRA + extra
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=dict(os.environ, **(env or {})))
        LIVE.append(self)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            self.proc.kill()
            self.proc.wait()
            fail(f"server {name} did not start ({' '.join(cmd)}): {line!r}\n" + self.tail())
        self.url = m.group(1)
        self.pid = self.proc.pid

    def tail(self, n=3000):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()[-n:]

    def stop(self, sig=signal.SIGTERM):
        """SIGTERM (or SIGINT); the exit code must be 0."""
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            fail(f"server {self.name} did not exit within 120 s of SIGTERM\n" + self.tail())
        self.log.close()
        if rc != 0:
            fail(f"server {self.name} exited {rc} after SIGTERM (expected 0)\n" + self.tail())

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def status(self):
        st, j = http(self.url + "/api/status")
        if st != 200 or not isinstance(j, dict):
            fail(f"{self.name}: GET /api/status: {st} {j}")
        if "cache" not in j or not isinstance(j["cache"], dict):
            fail(f"{self.name}: /api/status has no \"cache\" object: keys {sorted(j)}")
        return j["cache"]

    def settle(self, what=""):
        """Waits until the SSD writer is idle: nothing pending and the save and
        write counters unchanged over three polls. Returns the cache status."""
        deadline = time.time() + 120
        last, same = None, 0
        while time.time() < deadline:
            c = self.status()
            pending = c.get("pending", {}).get("blocks", 0)
            sig = (c.get("saves"), c.get("ssd", {}).get("writes"), c.get("ssd", {}).get("files"),
                   c.get("hot", {}).get("blocks"), pending)
            same = same + 1 if (sig == last and pending == 0) else 0
            last = sig
            if same >= 3:
                return c
            time.sleep(0.05)
        fail(f"{self.name}: the cache did not settle {what} within 120 s: {last}")

    def chat(self, text, quiet=False, max_tokens=MAX_TOKENS):
        """(answer, prompt_tokens, cached_tokens); quiet: None on any error (a killed server)."""
        body = {"model": MODEL, "temperature": 0, "max_tokens": max_tokens, "ignore_eos": True,
                "messages": [{"role": "user", "content": text}]}
        try:
            st, j = http(self.url + "/v1/chat/completions", body)
        except (OSError, ValueError) as e:
            if quiet:
                return None
            fail(f"{self.name}: chat request: {e}\n" + self.tail())
        if st != 200:
            if quiet:
                return None
            fail(f"{self.name}: chat request: {st} {j}\n" + self.tail())
        msg = j["choices"][0]["message"]
        u = j["usage"]
        cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens")
        if cached is None:
            fail(f"{self.name}: usage has no prompt_tokens_details.cached_tokens: {u}")
        answer = (msg.get("content"), msg.get("reasoning_content"), j["choices"][0].get("finish_reason"),
                  u["completion_tokens"])
        return answer, u["prompt_tokens"], cached

    def count_tokens(self, text):
        st, j = http(self.url + "/v1/messages/count_tokens",
                     {"model": MODEL, "messages": [{"role": "user", "content": text}]})
        if st != 200:
            fail(f"{self.name}: count_tokens: {st} {j}")
        return j["input_tokens"]

    def post(self, path):
        st, j = http(self.url + path, {}, method="POST")
        if st != 200:
            fail(f"{self.name}: POST {path}: {st} {j}")
        return j


# ---- block files --------------------------------------------------------------

def scan(cache_dir):
    """{"blocks": [paths of *.safetensors], "tmp": [paths with 'tmp' in the name], "bytes": N}"""
    blocks, tmp, total = [], [], 0
    for d, _, files in os.walk(cache_dir):
        for f in files:
            p = os.path.join(d, f)
            try:
                size = os.stat(p).st_size
            except FileNotFoundError:  # deleted while we walk (eviction)
                continue
            if "tmp" in f:
                tmp.append(p)
            elif f.endswith(".safetensors"):
                blocks.append(p)
                total += size
    return {"blocks": blocks, "tmp": tmp, "bytes": total}


def disk_bytes(cache_dir, with_tmp=False):
    s = scan(cache_dir)
    if not with_tmp:
        return s["bytes"]
    extra = 0
    for p in s["tmp"]:
        try:
            extra += os.stat(p).st_size
        except FileNotFoundError:
            pass
    return s["bytes"] + extra


def _sizes(cache_dir):
    out = {}
    for d, _, files in os.walk(cache_dir):
        for f in files:
            p = os.path.join(d, f)
            if "tmp" in f or f.endswith(".safetensors"):
                try:
                    out[p] = (os.stat(p).st_size, "tmp" in f)
                except FileNotFoundError:
                    pass
    return out


def snapshot_bytes(cache_dir):
    """(block bytes, block + temp bytes) that were all on disk at one instant, or None.

    A directory walk is no snapshot: a file evicted after its directory was
    read and one written later in another directory would both be counted.
    Two walks that name the same files are one: every file was there from its
    visit in the first walk to its visit in the second, so all of them at the
    instant between the walks (names are never reused; a file only grows while
    written, so the smaller of its two sizes is a lower bound)."""
    a, b = _sizes(cache_dir), _sizes(cache_dir)
    if a.keys() != b.keys():
        return None
    final = sum(min(a[p][0], b[p][0]) for p in a if not a[p][1])
    tmp = sum(min(a[p][0], b[p][0]) for p in a if a[p][1])
    return final, final + tmp


def check_block_file(path):
    """None for a valid block file (docs: src/kv/block_file.h), else what is wrong."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return f"unreadable: {e}"
    if len(data) < 8:
        return "shorter than 8 bytes"
    n = int.from_bytes(data[:8], "little")
    if n == 0 or n > (1 << 20) or 8 + n > len(data):
        return f"bad header length {n} (file {len(data)} bytes)"
    try:
        h = json.loads(data[8:8 + n])
        md, kv = h["__metadata__"], h["kv"]
        begin, end = kv["data_offsets"]
        want_sha = md["data_sha256"].lower()
        key = md["block_key"].lower()
    except (ValueError, KeyError, TypeError) as e:
        return f"bad header: {e}"
    body = data[8 + n:]
    if begin != 0 or len(body) != end:
        return f"data is {len(body)} bytes, header says {end}"
    if hashlib.sha256(body).hexdigest() != want_sha:
        return "checksum mismatch"
    if os.path.basename(path) != key + ".safetensors" or os.path.basename(os.path.dirname(path)) != key[0]:
        return f"path does not match block_key {key}"
    return None


def header_end(path):
    with open(path, "rb") as f:
        return 8 + int.from_bytes(f.read(8), "little")


# ---- prompts ------------------------------------------------------------------

def make_text(seed, words):
    rng = random.Random(seed)
    return f"Document {seed}. " + " ".join(rng.choice(WORDS) for _ in range(words))


def prompt_of(srv, seed, target):
    """A text whose chat prompt has between target and ~1.1 target tokens."""
    words = target // 2
    for _ in range(8):
        text = make_text(seed, words)
        n = srv.count_tokens(text)
        if target <= n <= target * 1.1 + 8:
            return text
        words = max(1, int(words * (target * 1.05) / max(n, 1)))
    fail(f"could not size a prompt of {target} tokens")


def full_blocks(prompt_tokens):
    """Tokens of all full blocks; the last token is always computed again."""
    n = prompt_tokens // BLOCK * BLOCK
    return n - 1 if n == prompt_tokens else n


def parallel(fn, items, threads):
    """Runs fn(item) over items on `threads` threads; results in item order."""
    out = [None] * len(items)
    lock = threading.Lock()
    nxt = [0]
    errors = []

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(items):
                return
            try:
                out[i] = fn(items[i])
            except SystemExit as e:  # fail() in a thread
                errors.append(e)
                return
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)
                return

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out, errors


# ---- scenarios ----------------------------------------------------------------

class Ctx:
    def __init__(self, args):
        self.binary = args.binary
        self.models = args.models_dir
        self.work = args.work
        self.cold_srv = None
        self.cold_cache = {}
        self.summary = {}
        with open(os.path.join(args.model, "config.json")) as f:
            c = json.load(f)
        head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        # K and V of every layer in the model's 16-bit type (--kv-dtype auto,
        # bf16 for this bf16 model): the data of one block file.
        self.block_bytes = 2 * c["num_hidden_layers"] * BLOCK * c["num_key_value_heads"] * head_dim * 2

    def server(self, scenario, extra, name, home=None, env=None):
        return Server(self.binary, self.models, home or os.path.join(self.work, scenario), extra,
                      f"{scenario}-{name}", env)

    def cold(self, text):
        """The answer of a server without a block store (started once, --cache-mode off)."""
        if text not in self.cold_cache:
            self.cold_cache[text] = self.cold_srv.chat(text)[0]
        return self.cold_cache[text]


def scenario_restart(ctx):
    cache = os.path.join(ctx.work, "restart", "cache")
    s1 = ctx.server("restart", ["--cache-dir", cache], "first")
    text = prompt_of(s1, 1, 3000)
    a1, p1, c1 = s1.chat(text)
    if p1 < 3000:
        fail(f"restart: the prompt has {p1} tokens, want >= 3000")
    if c1 != 0:
        fail(f"restart: the first request on an empty cache reports {c1} cached tokens")
    st = s1.status()
    if st.get("mode") != "write-back":
        fail(f"restart: default cache mode is {st.get('mode')!r}, want write-back")
    s1.stop()
    files = scan(cache)
    want = full_blocks(p1)
    if len(files["blocks"]) < want // BLOCK:
        fail(f"restart: {len(files['blocks'])} block files after SIGTERM, want >= {want // BLOCK} "
             f"(the dirty hot blocks of a {p1}-token prompt)")
    bad = [(p, r) for p in files["blocks"] if (r := check_block_file(p))]
    if bad:
        fail(f"restart: invalid block files after a clean shutdown: {bad[:3]}")

    s2 = ctx.server("restart", ["--cache-dir", cache], "second")
    a2, p2, c2 = s2.chat(text)
    st2 = s2.status()
    s2.stop()
    if p2 != p1:
        fail(f"restart: prompt_tokens {p2} after the restart, {p1} before")
    if c2 < want:
        fail(f"restart: cached_tokens {c2} after the restart, want >= {want} (all full blocks of {p1}); "
             f"cache status {json.dumps(st2)}")
    if a2 != a1:
        fail(f"restart: the answer after the restart differs from the cold run's:\n  {a2}\n  {a1}")
    if st2.get("loads", 0) < want // BLOCK or st2.get("ssd", {}).get("hits", 0) < 1:
        fail(f"restart: /api/status does not show the SSD restore: {json.dumps(st2)}")

    s3 = ctx.server("restart", ["--cache-dir", cache, "--cache-mode", "off"], "off")
    a3, _, c3 = s3.chat(text)
    s3.stop()
    if c3 != 0:
        fail(f"restart: --cache-mode off reports {c3} cached tokens")
    if a3 != a1:
        fail(f"restart: the --cache-mode off answer differs:\n  {a3}\n  {a1}")
    ctx.summary["restart"] = {"prompt_tokens": p1, "cached_after_restart": c2, "files": len(files["blocks"]),
                              "loads": st2.get("loads")}


def scenario_split(ctx):
    cache = os.path.join(ctx.work, "split", "cache")
    split = ["--cache-dir", cache, "--device", "cpu", "--tensor-parallel", "2"]
    s1 = ctx.server("split", split, "first")
    text = prompt_of(s1, 7, 1000)
    a1, p1, c1 = s1.chat(text)
    if c1 != 0:
        fail(f"split: the first request on an empty cache reports {c1} cached tokens")
    s1.stop()
    files = scan(cache)
    want = full_blocks(p1)
    if len(files["blocks"]) < want // BLOCK:
        fail(f"split: {len(files['blocks'])} block files after SIGTERM, want >= {want // BLOCK}")
    s2 = ctx.server("split", split, "second")
    a2, p2, c2 = s2.chat(text)
    s2.stop()
    if c2 < want:
        fail(f"split: cached_tokens {c2} after the restart, want >= {want} (all full blocks of {p1})")
    if a2 != a1:
        fail(f"split: the answer after the restart differs from the first run's:\n  {a2}\n  {a1}")
    s3 = ctx.server("split", ["--cache-dir", cache, "--device", "cpu"], "unsplit")
    _, _, c3 = s3.chat(text)
    s3.stop()
    if c3 != 0:
        fail(f"split: an unsplit server restored {c3} tokens of the split model's blocks")
    # Recorded, not asserted: CPU `auto` rounds activations per row slice on each rank.
    ctx.summary["split"] = {"prompt_tokens": p1, "cached_after_restart": c2, "files": len(files["blocks"]),
                            "same_answer_as_unsplit": a1 == ctx.cold(text)}


def scenario_crash(ctx, n_prompts=24, tokens=320):
    cache = os.path.join(ctx.work, "crash", "cache")
    texts = [prompt_of(ctx.cold_srv, 100 + i, tokens) for i in range(n_prompts)]
    cold = [ctx.cold(t) for t in texts]
    # Traffic: ~n_prompts * tokens / BLOCK block files; the cap holds about 60% of them.
    expected_files = n_prompts * (tokens // BLOCK)
    cap = int(expected_files * (ctx.block_bytes + 700) * 0.6)  # 700: about a file's header
    flags = ["--cache-dir", cache, "--cache-mode", "write-through", "--ssd-cache-max-size", str(cap)]

    s = ctx.server("crash", flags, "victim")
    served = {}
    stop = threading.Event()

    def one(i):
        if stop.is_set():
            return None
        r = s.chat(texts[i], quiet=True)  # None: cut by the kill
        if r is not None:
            served[i] = r[0]
        return r

    killer_seen = {}

    def killer():
        # Mid-way: once a third of the expected block files exist.
        deadline = time.time() + 300
        while time.time() < deadline and not stop.is_set():
            n = len(scan(cache)["blocks"])
            if n >= expected_files // 3:
                killer_seen["files"] = n
                break
            time.sleep(0.002)
        killer_seen["served"] = len(served)
        stop.set()
        s.kill9()

    kt = threading.Thread(target=killer)
    kt.start()
    parallel(one, list(range(n_prompts)), 4)
    stop.set()
    kt.join()
    for i, a in served.items():
        if a != cold[i]:
            fail(f"crash: prompt {i} answered differently before the kill:\n  {a}\n  {cold[i]}")

    after_kill = scan(cache)
    corrupt = [(p, r) for p in after_kill["blocks"] if (r := check_block_file(p))]
    note(f"crash: killed with {killer_seen.get('served')} of {n_prompts} answers sent, "
         f"{len(after_kill['blocks'])} block files, {len(after_kill['tmp'])} temp files, "
         f"{len(corrupt)} corrupt")

    s = ctx.server("crash", flags, "restarted")
    st = s.status()
    now = scan(cache)
    if now["tmp"]:
        fail(f"crash: temp files remain after the restart: {now['tmp'][:3]}")
    if st.get("errors", 0) > len(corrupt):
        fail(f"crash: {st['errors']} errors counted at start, but only {len(corrupt)} files are corrupt")
    valid = [p for p in now["blocks"] if not check_block_file(p)]
    ssd = st.get("ssd", {})
    if ssd.get("files") != len(valid) or ssd.get("bytes") != sum(os.stat(p).st_size for p in valid):
        fail(f"crash: the rebuilt index says {ssd.get('files')} files / {ssd.get('bytes')} bytes, the disk "
             f"holds {len(valid)} valid files / {sum(os.stat(p).st_size for p in valid)} bytes")
    if now["bytes"] > cap:
        fail(f"crash: {now['bytes']} bytes of block files after the restart, cap {cap}")
    results, errs = parallel(lambda i: s.chat(texts[i]), list(range(n_prompts)), 4)
    if errs:
        fail(f"crash: requests after the restart failed: {errs[0]}")
    restored = sum(1 for r in results if r[2] > 0)
    for i, (a, _, _) in enumerate(results):
        if a != cold[i]:
            fail(f"crash: prompt {i} after the restart differs from the cold answer:\n  {a}\n  {cold[i]}")
    if restored == 0:
        fail("crash: no prompt was restored from the rebuilt index (cached_tokens 0 everywhere)")
    st = s.settle("after the replay")
    end = scan(cache)
    if end["bytes"] > cap or st["ssd"]["bytes"] > cap:
        fail(f"crash: disk {end['bytes']} / status {st['ssd']['bytes']} bytes exceed the cap {cap}")
    if st.get("errors", 0) > len(corrupt):
        fail(f"crash: {st['errors']} errors, but only {len(corrupt)} files were corrupt")
    s.stop()
    ctx.summary["crash"] = {"prompts": n_prompts, "answered_before_kill": killer_seen.get("served"),
                            "files_at_kill": len(after_kill["blocks"]), "tmp_at_kill": len(after_kill["tmp"]),
                            "corrupt_at_kill": len(corrupt), "restored_prompts": restored, "cap": cap,
                            "disk_bytes_end": end["bytes"], "errors": st.get("errors")}


def scenario_corruption(ctx, n_prompts=5, tokens=200):
    cache = os.path.join(ctx.work, "corruption", "cache")
    texts = [prompt_of(ctx.cold_srv, 200 + i, tokens) for i in range(n_prompts)]
    cold = [ctx.cold(t) for t in texts]
    flags = ["--cache-dir", cache, "--cache-mode", "write-through"]
    s = ctx.server("corruption", flags, "clean")
    first_block = []  # the file of each prompt's first block
    seen = set()
    for i, t in enumerate(texts):
        # The longest word prefix of the prompt whose chat has < 30 tokens: one
        # full block, which holds only the template's opening and the text's
        # first words (the template's closing takes ~10 tokens), as in the
        # whole prompt; the one file it writes is the prompt's first block.
        words = t.split(" ")
        w = 1
        while s.count_tokens(" ".join(words[:w + 1])) < 2 * BLOCK - 2:
            w += 1
        short = " ".join(words[:w])
        s.chat(short, max_tokens=1)  # (generated tokens fill blocks too)
        s.settle()
        now = set(scan(cache)["blocks"])
        if len(now - seen) != 1:
            fail(f"corruption: a one-block prompt wrote {len(now - seen)} block files")
        first_block.append((now - seen).pop())
        _, _, c = s.chat(t)
        if c < BLOCK:  # the prompt's own first block is that file
            fail(f"corruption: prompt {i} did not reuse its prefix's block (cached_tokens {c})")
        s.settle()
        seen = set(scan(cache)["blocks"])
    s.stop()
    # Damage each prompt's first block: a restore must read it first.
    flipped, truncated, deleted = first_block[0], first_block[1], first_block[2]
    with open(flipped, "r+b") as f:
        off = header_end(flipped) + 100
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0xFF]))
    size = os.stat(truncated).st_size
    with open(truncated, "r+b") as f:
        f.truncate(size // 2)
    os.remove(deleted)
    if check_block_file(flipped) is None or check_block_file(truncated) is None:
        fail("corruption: the damage was not made")

    s = ctx.server("corruption", flags, "restarted")
    st0 = s.status()
    # Missing after the startup scan: the index still names it.
    gone_live = first_block[4]
    os.remove(gone_live)
    answers = [s.chat(t) for t in texts]
    st = s.settle()
    for i, (a, p, c) in enumerate(answers):
        if a != cold[i]:
            fail(f"corruption: prompt {i} differs from the cold answer:\n  {a}\n  {cold[i]}")
    a3, p3, c3 = answers[3]
    if c3 < full_blocks(p3):
        fail(f"corruption: the intact prompt restored {c3} tokens, want >= {full_blocks(p3)}")
    for i in (0, 1, 2, 4):
        if answers[i][2] != 0:
            fail(f"corruption: prompt {i}, whose first block file is bad or gone, reports "
                 f"{answers[i][2]} cached tokens")
    # Flipped, truncated, deleted after the scan; the file deleted before the
    # start may count too.
    if not 3 <= st.get("errors", 0) <= 4:
        fail(f"corruption: cache.errors is {st.get('errors')}, want 3 or 4 (a flipped file, a truncated one, "
             f"one deleted after the start scan, maybe one deleted before it); at start it was "
             f"{st0.get('errors')}; status {json.dumps(st)}")
    model_errors = st.get("models", {}).get(MODEL, {}).get("errors")
    s.stop()
    end = scan(cache)
    bad = [(p, r) for p in end["blocks"] if (r := check_block_file(p))]
    if bad:
        fail(f"corruption: bad block files remain on disk: {bad[:3]}")
    ctx.summary["corruption"] = {"errors_at_start": st0.get("errors"), "errors": st.get("errors"),
                                 "model_errors": model_errors, "misses": st.get("misses"),
                                 "cached_tokens": [c for _, _, c in answers]}


def scenario_cap(ctx, n_prompts=16, tokens=256):
    cache = os.path.join(ctx.work, "cap", "cache")
    cap = 1 << 19  # ~1/5 of the ~2.4 MB of (16-bit) block files written below
    flags = ["--cache-dir", cache, "--cache-mode", "write-through", "--ssd-cache-max-size", "512KiB"]
    s = ctx.server("cap", flags, "writer")
    texts = [prompt_of(s, 300 + i, tokens) for i in range(n_prompts)]
    peak = {"final": 0, "with_tmp": 0, "samples": 0}
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            snap = snapshot_bytes(cache)
            if snap is not None:
                peak["final"] = max(peak["final"], snap[0])
                peak["with_tmp"] = max(peak["with_tmp"], snap[1])
                peak["samples"] += 1
            time.sleep(0.005)

    th = threading.Thread(target=sampler)
    th.start()
    st = None
    try:
        for i, t in enumerate(texts):
            s.chat(t)
            st = s.settle()
            d = disk_bytes(cache)
            if d > cap:
                fail(f"cap: {d} bytes of block files after request {i}, cap {cap}")
            if st["ssd"]["bytes"] > cap:
                fail(f"cap: /api/status ssd.bytes {st['ssd']['bytes']} after request {i}, cap {cap}")
    finally:
        stop.set()
        th.join()
    written = st["ssd"]["writes"]
    per_file = max(os.stat(p).st_size for p in scan(cache)["blocks"])
    if written * per_file < 3 * cap:
        fail(f"cap: only {written} files of {per_file} bytes written: not enough traffic for the check")
    if peak["samples"] < 10:
        fail(f"cap: only {peak['samples']} consistent disk samples: the check saw too little")
    if peak["final"] > cap:
        fail(f"cap: a sample saw {peak['final']} bytes of block files, cap {cap}")
    if peak["with_tmp"] > cap:
        fail(f"cap: a sample saw {peak['with_tmp']} bytes of block and temp files, cap {cap}")
    if st["ssd"].get("evictions", 0) <= 0:
        fail(f"cap: no SSD evictions: {json.dumps(st['ssd'])}")
    if st["ssd"].get("max_bytes") != cap or st["ssd"].get("effective_max_bytes", cap + 1) > cap:
        fail(f"cap: --ssd-cache-max-size 512KiB shows as max_bytes {st['ssd'].get('max_bytes')}, "
             f"effective {st['ssd'].get('effective_max_bytes')}")
    s.stop()
    # A smaller cap is enforced at start.
    small = cap // 2
    s = ctx.server("cap", ["--cache-dir", cache, "--ssd-cache-max-size", str(small)], "smaller")
    st2 = s.status()
    d2 = disk_bytes(cache)
    s.stop()
    if d2 > small or st2["ssd"]["bytes"] > small or st2["ssd"].get("evictions", 0) <= 0:
        fail(f"cap: a restart with a cap of {small} leaves {d2} bytes on disk ({json.dumps(st2['ssd'])})")
    ctx.summary["cap"] = {"cap": cap, "traffic_bytes": written * per_file, "peak_disk_bytes": peak["final"],
                          "peak_with_tmp": peak["with_tmp"], "samples": peak["samples"],
                          "evictions": st["ssd"]["evictions"], "disk_after_smaller_cap": d2}


def scenario_admin(ctx):
    home = os.path.join(ctx.work, "admin")
    cache = os.path.join(home, "cache")  # the default: <home>/cache
    s = ctx.server("admin", [], "write-back", home=home)
    texts = [make_text(400 + i, 120) for i in range(2)]
    first = s.chat(texts[0])
    s.chat(texts[1])
    st = s.settle()
    if os.path.realpath(st["ssd"].get("dir", "")) != os.path.realpath(cache):
        fail(f"admin: ssd.dir is {st['ssd'].get('dir')!r}, want the default {cache}")
    # Blocks outlive the model's engine: unload it, ask again, the hot tier answers.
    a0, p0, _ = first
    s.post(f"/admin/api/models/{MODEL}/unload")
    a, _, c = s.chat(texts[0])
    if a != a0 or c < full_blocks(p0):
        fail(f"admin: after unloading the model: cached_tokens {c} (want >= {full_blocks(p0)}), "
             f"answer {a} (before: {a0})")
    st = s.settle()
    if st["hot"]["hits"] <= 0:
        fail(f"admin: the restore after an unload shows no hot hits: {json.dumps(st['hot'])}")
    hot = st["hot"]["blocks"]
    if hot <= 0:
        fail(f"admin: no hot blocks after two prompts: {json.dumps(st)}")
    # The hot tier's RAM counts in the pool's memory accounting.
    _, full = http(s.url + "/api/status")
    ram = st["hot"]["bytes"] + st["pending"]["bytes"]
    if full.get("memory", {}).get("cache_bytes") != ram:
        fail(f"admin: /api/status memory.cache_bytes is {full.get('memory', {}).get('cache_bytes')}, "
             f"the hot tier holds {ram} bytes")
    if scan(cache)["blocks"] or st["ssd"]["files"]:
        fail(f"admin: write-back wrote {st['ssd']['files']} files before any eviction")
    j = s.post("/admin/api/cache/clear-hot")
    if j.get("cleared") != hot:
        fail(f"admin: clear-hot returned {j}, want cleared {hot}")
    st = s.settle("after clear-hot")
    if st["hot"]["blocks"] != 0 or st["hot"]["bytes"] != 0:
        fail(f"admin: the hot tier is not empty after clear-hot: {json.dumps(st['hot'])}")
    files = scan(cache)["blocks"]
    if st["ssd"]["files"] != hot or len(files) != hot:
        fail(f"admin: clear-hot lost dirty blocks: {hot} were hot, {st['ssd']['files']} indexed and "
             f"{len(files)} on disk after it")
    st_admin = http(s.url + "/admin/api/cache")
    if st_admin[0] != 200 or st_admin[1].get("ssd", {}).get("files") != hot:
        fail(f"admin: GET /admin/api/cache: {st_admin}")
    j = s.post("/admin/api/cache/clear-ssd")
    if j.get("cleared") != hot:
        fail(f"admin: clear-ssd returned {j}, want cleared {hot}")
    st = s.status()
    left = scan(cache)
    if st["ssd"]["files"] != 0 or st["ssd"]["bytes"] != 0 or left["blocks"]:
        fail(f"admin: after clear-ssd: status {json.dumps(st['ssd'])}, {len(left['blocks'])} files on disk")
    s.stop()
    ctx.summary["admin"] = {"hot_blocks": hot, "cleared_ssd": j.get("cleared")}


def effective_ram():
    """MemTotal, or the cgroup v2 memory limit when lower (what 10% is a share of)."""
    with open("/proc/meminfo") as f:
        total = int(f.readline().split()[1]) * 1024
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            v = f.read().strip()
        if v != "max":
            total = min(total, int(v))
    except OSError:
        pass
    return total


def scenario_modes(ctx):
    """hot-only, write-back eviction under a small hot budget, the settings'
    three sources, and a block size change (another layout's files)."""
    text = prompt_of(ctx.cold_srv, 500, 200)
    cold = ctx.cold(text)
    home = os.path.join(ctx.work, "modes")
    cache = os.path.join(home, "cache-from-env")

    # hot-only, a percentage of RAM: nothing reaches the disk; an unload keeps the blocks.
    s = ctx.server("modes", ["--cache-mode", "hot-only", "--hot-cache-max-size", "1%", "--cache-dir", cache],
                   "hot-only")
    a, p, _ = s.chat(text)
    st = s.settle()
    want = effective_ram() // 100
    if abs(st["hot"]["max_bytes"] - want) > want // 100:
        fail(f"modes: --hot-cache-max-size 1% gives {st['hot']['max_bytes']} bytes, want ~{want}")
    if scan(cache)["blocks"] or st.get("ssd", {}).get("files", 0):
        fail("modes: hot-only wrote block files")
    s.post(f"/admin/api/models/{MODEL}/unload")
    a2, _, c2 = s.chat(text)
    s.stop()
    if a != cold or a2 != cold or c2 < full_blocks(p):
        fail(f"modes: hot-only after an unload: cached {c2} (want >= {full_blocks(p)}), answers {a} / {a2}, "
             f"cold {cold}")
    if scan(cache)["blocks"]:
        fail("modes: hot-only wrote block files at shutdown")

    # write-back with a 64 KiB hot tier (4 blocks): dirty blocks reach the disk
    # when evicted, the rest at SIGINT. Cache dir from the environment, SSD
    # cap from settings.json.
    with open(os.path.join(home, "settings.json"), "w") as f:
        json.dump({"ssd_cache_max_size": "10MB"}, f)
    env = {"LLMHOST_CACHE_DIR": cache}
    s = ctx.server("modes", ["--hot-cache-max-size", "64KiB"], "write-back", env=env)
    a, p, _ = s.chat(text)
    st = s.settle()
    hot, ssd = st["hot"], st["ssd"]
    if a != cold:
        fail(f"modes: write-back answer {a}, cold {cold}")
    if hot["max_bytes"] != 65536 or hot["bytes"] > 65536 or hot["evictions"] <= 0:
        fail(f"modes: a 64KiB hot tier: {json.dumps(hot)}")
    if ssd["max_bytes"] != 10 << 20 or os.path.realpath(ssd["dir"]) != os.path.realpath(cache):
        fail(f"modes: settings.json's ssd_cache_max_size 10MB / LLMHOST_CACHE_DIR not applied: {json.dumps(ssd)}")
    if ssd["writes"] != hot["evictions"] or len(scan(cache)["blocks"]) != ssd["files"]:
        fail(f"modes: write-back wrote {ssd['writes']} files for {hot['evictions']} evicted dirty blocks "
             f"({len(scan(cache)['blocks'])} on disk)")
    saves = st["saves"]
    s.stop(signal.SIGINT)
    files = scan(cache)["blocks"]
    if len(files) != saves:
        fail(f"modes: {len(files)} block files after SIGINT, {saves} blocks saved (the flush lost some)")

    # Another block size is another layout: its files are kept, never matched.
    s = ctx.server("modes", ["--block-size", str(2 * BLOCK)], "block-size-32", env=env)
    st0 = s.status()
    a, _, c = s.chat(text)
    st = s.settle()
    s.stop()
    if a != cold or c != 0:
        fail(f"modes: with --block-size {2 * BLOCK}: cached {c} (want 0), answer {a}, cold {cold}")
    if st0["ssd"]["files"] != len(files) or st0.get("errors", 0) or st.get("errors", 0):
        fail(f"modes: a block size change: {st0['ssd']['files']} files indexed of {len(files)}, errors "
             f"{st.get('errors')}")
    left = set(scan(cache)["blocks"])
    if not set(files) <= left:
        fail("modes: files of the other block size were deleted while space allows")
    ctx.summary["modes"] = {"hot_evictions": hot["evictions"], "ssd_writes": ssd["writes"], "saves": saves,
                            "files_after_flush": len(files), "files_with_both_layouts": len(left)}


# ---- weights change ------------------------------------------------------------

W_MODEL = "weights-w"
IDENTITY_WINDOWS, WINDOW_BYTES = 16, 64 * 1024  # kv/fingerprint.h's sampled identity


def embedding_rows_outside_windows(path, n):
    """Rows of model.embed_tokens.weight whose bytes no window covers, and the
    tensor's (absolute offset, row bytes)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        header_len = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(header_len))
    t = header["model.embed_tokens.weight"]
    rows, width = t["shape"]
    elem = {"BF16": 2, "F16": 2, "F32": 4}[t["dtype"]]
    base = 8 + header_len + t["data_offsets"][0]
    row_bytes = width * elem
    w = min(WINDOW_BYTES, size)
    windows = [((size - w) * i // (IDENTITY_WINDOWS - 1), (size - w) * i // (IDENTITY_WINDOWS - 1) + w)
               for i in range(IDENTITY_WINDOWS)]
    free = [r for r in range(300, rows)
            if all(base + (r + 1) * row_bytes <= a or base + r * row_bytes >= b for a, b in windows)]
    if len(free) < n:
        fail(f"weights: only {len(free)} embedding rows lie outside the identity's windows")
    return free[:n], base, row_bytes, elem


def negate_rows(path, rows, base, row_bytes, elem):
    """Flips the sign of every element of `rows`, in place."""
    with open(path, "r+b") as f:
        for r in rows:
            f.seek(base + r * row_bytes)
            data = bytearray(f.read(row_bytes))
            for k in range(elem - 1, len(data), elem):  # the sign bit is in each element's last byte
                data[k] ^= 0x80
            f.seek(base + r * row_bytes)
            f.write(data)


def complete_ids(srv, ids):
    st, j = http(srv.url + "/v1/completions", {"model": W_MODEL, "prompt": ids, "temperature": 0,
                                               "max_tokens": MAX_TOKENS, "ignore_eos": True})
    if st != 200:
        fail(f"{srv.name}: completion: {st} {j}\n" + srv.tail())
    u = j["usage"]
    return j["choices"][0]["text"], (u.get("prompt_tokens_details") or {}).get("cached_tokens")


def wait_store_ready(srv):
    """Loads the model and waits until its weights' full identity is known."""
    st, j = http(srv.url + f"/admin/api/models/{W_MODEL}/load", {}, method="POST")
    if st != 200:
        fail(f"{srv.name}: load: {st} {j}")
    deadline = time.time() + 120
    while time.time() < deadline:
        _, j = http(srv.url + "/api/status")
        m = next((m for m in j.get("models", []) if m.get("id") == W_MODEL), {})
        if m.get("kv", {}).get("store_ready"):
            return
        time.sleep(0.05)
    fail(f"{srv.name}: the weights were not hashed within 120 s\n" + srv.tail())


def scenario_weights(ctx):
    models = os.path.join(ctx.work, "weights", "models")
    model = os.path.join(models, W_MODEL)
    shape = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
             "intermediate_size": 128, "vocab_size": 16384, "max_position_embeddings": 1024,
             "tie_word_embeddings": False}
    r = subprocess.run([ctx.binary, "synth-model", "--arch", "llama", "--dtype", "bf16", "--seed", "5",
                        "--out", model, "--config", json.dumps(shape)], capture_output=True, text=True)
    if r.returncode != 0:
        fail("weights: synth-model: " + r.stderr)
    weights = os.path.join(model, "model.safetensors")
    rows, base, row_bytes, elem = embedding_rows_outside_windows(weights, 12)
    # Five full blocks; the changed rows' tokens lead the prompt.
    rnd = random.Random(7)
    ids = rows + [rnd.randrange(300, 16000) for _ in range(5 * BLOCK - len(rows))]
    home = os.path.join(ctx.work, "weights")
    cache = os.path.join(home, "cache")

    def server(name, extra=()):
        return Server(ctx.binary, models, home, ["--cache-dir", cache] + list(extra), f"weights-{name}")

    s1 = server("first")
    wait_store_ready(s1)
    t1, c1 = complete_ids(s1, ids)
    s1.stop()
    if c1 != 0:
        fail(f"weights: the first request reports {c1} cached tokens")
    s2 = server("same")
    wait_store_ready(s2)
    t2, c2 = complete_ids(s2, ids)
    s2.stop()
    if c2 < 4 * BLOCK or t2 != t1:
        fail(f"weights: unchanged weights after a restart: cached {c2} (want >= {4 * BLOCK}), same text: {t2 == t1}")

    size = os.path.getsize(weights)
    negate_rows(weights, rows, base, row_bytes, elem)
    if os.path.getsize(weights) != size:
        fail("weights: the edit changed the file's size")
    cold = server("cold", ["--cache-mode", "off"])
    t_cold, _ = complete_ids(cold, ids)
    cold.stop()
    s3 = server("changed")
    wait_store_ready(s3)
    t3, c3 = complete_ids(s3, ids)
    s3.stop()
    if c3 != 0:
        fail(f"weights: after negating {len(rows)} embedding rows the server restored {c3} cached tokens "
             f"computed with the old weights")
    if t3 != t_cold:
        fail(f"weights: the answer on the new weights differs from a cold server's:\n  {t3!r}\n  {t_cold!r}")
    ctx.summary["weights"] = {"rows_changed": len(rows), "cached_same_weights": c2, "cached_after_change": c3,
                              "answer_changed": t_cold != t1}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--model", default=os.path.join(here, "..", "data", "models", MODEL))
    ap.add_argument("--work", default=None,
                    help="scratch folder, emptied first (default: a temp dir); removed on success")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--only", default="", help="comma-separated scenarios to run (default: all)")
    ap.add_argument("--device", default="", help="serve --device for every server (default: serve's own, auto)")
    args = ap.parse_args()
    if args.device:
        SERVE_EXTRA.extend(["--device", args.device])
    if not sys.platform.startswith("linux") or not os.path.exists("/proc/self/status"):
        print("kv_tiers: needs Linux: skipped")
        return 77
    if not os.path.exists(os.path.join(args.model, "config.json")):
        fail(f"no model at {args.model}")
    t0 = time.time()
    made = args.work is None
    args.work = args.work or tempfile.mkdtemp(prefix="llmhost-kv-tiers-")
    if os.path.exists(args.work) and not made:
        shutil.rmtree(args.work)
    os.makedirs(args.work, exist_ok=True)
    # A model folder with only the one model (discovery stays quick).
    args.models_dir = os.path.join(args.work, "models")
    shutil.copytree(args.model, os.path.join(args.models_dir, MODEL))
    ctx = Ctx(args)
    ctx.cold_srv = ctx.server("cold", ["--cache-mode", "off"], "reference")
    scenarios = [("restart", scenario_restart), ("crash", scenario_crash), ("corruption", scenario_corruption),
                 ("cap", scenario_cap), ("admin", scenario_admin), ("modes", scenario_modes),
                 ("weights", scenario_weights), ("split", scenario_split)]
    only = [x for x in args.only.split(",") if x]
    try:
        for name, fn in scenarios:
            if only and name not in only:
                continue
            t = time.time()
            fn(ctx)
            note(f"{name}: ok ({time.time() - t:.1f} s)")
        ctx.cold_srv.stop()
    finally:
        kill_live()
    ctx.summary["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(ctx.summary, indent=1))
    if not args.keep:  # kept after a failure: the servers' logs are there
        shutil.rmtree(args.work, ignore_errors=True)
    print("kv_tiers: ok", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
