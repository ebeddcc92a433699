#!/usr/bin/env python3
"""KV cache tiers benchmark of issue 6 (run by bench/run_kv_tier_bench.sh).

TTFT of one N-token prompt (random token ids, /v1/completions, max_tokens 1,
non-streaming: the request time is the TTFT) served by `llmhost serve`:
  cold   a fresh cache dir: the whole prompt is prefilled;
  hot    the model is unloaded (its paged KV cache goes with the engine),
         loaded again (load not timed), and the same prompt sent: its blocks
         come from the hot RAM tier;
  ssd    SIGTERM (the dirty hot blocks are flushed to the SSD tier), the
         block files' pages dropped from the page cache
         (posix_fadvise DONTNEED; checked with mincore), a new server on the
         same cache dir, the model loaded (not timed), the same prompt: its
         blocks come from the files;
  rest   the same prompt once more on that server: the paged cache holds it
         and only the last position runs: the part of the TTFT that is not
         restore (prefill of one position + one sampled token + HTTP).
Restore throughput = block bytes restored / (TTFT - rest). The disk's
sequential read bandwidth is measured with dd (O_DIRECT) on the cache dir's
filesystem, and the block files' plain read rate after dropping their pages.

Usage: kv_tier_bench.py LLMHOST MODEL_DIR [--tokens 8192] [--work DIR] [--extra "serve flags"]
"""
import argparse
import ctypes
import ctypes.util
import json
import mmap
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import llmhost_http  # noqa: E402


def http(url, body=None, timeout=3600, method=None):
    return llmhost_http.http(url, body, timeout, method)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def log(msg):
    print(f"kv_tier_bench: [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Server:
    def __init__(self, binary, home, models_dir, extra):
        self.log_path = os.path.join(home, f"serve-{int(time.time() * 1000)}.log")
        self.log = open(self.log_path, "w")
        cmd = [binary, "serve", "--home", home, "--model-dir", models_dir, "--port", "0"] + extra
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=dict(os.environ, LLMHOST_LOG_LEVEL=os.environ.get("LLMHOST_LOG_LEVEL", "info")))
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            self.proc.kill()
            sys.exit("kv_tier_bench: the server did not start: " + open(self.log_path).read()[-2000:])
        self.url = m.group(1)

    def cpu_s(self):
        """The server's CPU time so far (user + system, all threads), seconds."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        t0 = time.time()
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=900)
        self.log.close()
        if rc != 0:
            sys.exit(f"kv_tier_bench: the server exited {rc} after SIGTERM: " + open(self.log_path).read()[-2000:])
        return time.time() - t0

    def cache(self):
        _, j = http(self.url + "/api/status")
        return j.get("cache", {})

    def admin(self, model, action):
        st, j = http(self.url + f"/admin/api/models/{model}/{action}", {})
        if st not in (200, 202):
            sys.exit(f"kv_tier_bench: {action} {model}: {st} {j}")
        if st == 202:  # unloading once idle
            for _ in range(600):
                _, s = http(self.url + "/v1/models/status")
                if not any(m.get("id") == model and m.get("loaded") for m in s.get("models", [])):
                    break
                time.sleep(0.1)

    def complete(self, model, ids):
        body = {"model": model, "prompt": ids, "max_tokens": 1, "temperature": 0}
        t0 = time.perf_counter()
        st, j = http(self.url + "/v1/completions", body)
        dt = time.perf_counter() - t0
        if st != 200:
            sys.exit(f"kv_tier_bench: completion: {st} {j}")
        u = j["usage"]
        return dt, u["prompt_tokens"], (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0)


def block_files(cache_dir):
    out = []
    for d, _, files in os.walk(cache_dir):
        out += [os.path.join(d, f) for f in files if f.endswith(".safetensors")]
    return out


_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def resident_bytes(path):
    """Bytes of `path` in the page cache (mincore over a mapping); -1 when unknown."""
    size = os.path.getsize(path)
    if size == 0:
        return 0
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    fd = os.open(path, os.O_RDONLY)
    try:
        p = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if p is None or p == ctypes.c_void_p(-1).value:
            return -1
        rc = _libc.mincore(p, size, vec)
        _libc.munmap(p, size)
    finally:
        os.close(fd)
    if rc != 0:
        return -1
    return sum(mmap.PAGESIZE for v in vec if v & 1)


def drop_pages(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return sum(max(resident_bytes(p), 0) for p in paths)


def dd_read_bandwidth(folder, mib=1024):
    """Sequential O_DIRECT read of a fresh `mib` MiB file in `folder` (GB/s, 1e9 bytes)."""
    path = os.path.join(folder, "dd-bandwidth-test.bin")
    subprocess.run(["dd", "if=/dev/urandom", f"of={path}", "bs=1M", f"count={mib}", "oflag=direct",
                    "status=none"], check=True)
    drop_pages([path])
    t0 = time.perf_counter()
    r = subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=4M", "iflag=direct"],
                       capture_output=True, text=True)
    dt = time.perf_counter() - t0
    os.remove(path)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return mib * 2**20 / dt / 1e9, r.stderr.strip().splitlines()[-1]


def plain_read_rate(paths):
    """Reads every file once (pages dropped before): GB/s."""
    drop_pages(paths)
    total = 0
    t0 = time.perf_counter()
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while True:
                b = f.read(16 << 20)
                if not b:
                    break
                total += len(b)
    dt = time.perf_counter() - t0
    drop_pages(paths)
    return total / dt / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model_dir", help="a folder holding the model's folder, or a random-weights spec")
    ap.add_argument("--model", required=True, help="the model id (its folder name)")
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--work", default=None)
    ap.add_argument("--extra", default="", help="more serve flags, space-separated")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="llmhost-kvbench-")
    home = os.path.join(work, "home")
    if os.path.exists(home):
        shutil.rmtree(home)
    os.makedirs(home)
    cache = os.path.join(home, "cache")
    extra = ["--cache-dir", cache] + args.extra.split()
    rng = random.Random(6)
    ids = [rng.randrange(3, args.vocab - 3) for _ in range(args.tokens)]
    res = {"tokens": args.tokens, "model": args.model, "load_start": loadavg()}

    log(f"load average {res['load_start']}; measuring the disk")
    os.makedirs(cache, exist_ok=True)
    bw, dd_line = dd_read_bandwidth(cache)
    res["disk_read_gbps_odirect"] = bw
    res["dd"] = dd_line

    srv = Server(args.binary, home, args.model_dir, extra)
    srv.admin(args.model, "load")
    log("cold prefill")
    cpu0 = srv.cpu_s()
    res["cold_s"], p, c = srv.complete(args.model, ids)
    # CPU seconds / 2: what the cold prefill would take with both cores to itself.
    res["cold_cpu_s"] = srv.cpu_s() - cpu0
    res["prompt_tokens"], res["cold_cached"] = p, c
    res["load_after_cold"] = loadavg()
    log(f"cold: {res['cold_s']:.2f} s (prompt {p}, cached {c}); load {res['load_after_cold']}")
    cache_after_cold = srv.cache()

    srv.admin(args.model, "unload")
    srv.admin(args.model, "load")
    res["hot_s"], _, res["hot_cached"] = srv.complete(args.model, ids)
    res["hot_repeat_s"], _, res["hot_repeat_cached"] = srv.complete(args.model, ids)  # paged hit
    c_hot = srv.cache()
    log(f"hot: {res['hot_s']:.3f} s (cached {res['hot_cached']}); paged repeat {res['hot_repeat_s']:.3f} s")
    res["shutdown_flush_s"] = srv.stop()

    files = block_files(cache)
    res["block_files"] = len(files)
    res["block_file_bytes"] = sum(os.path.getsize(f) for f in files)
    res["resident_before_drop"] = sum(max(resident_bytes(f), 0) for f in files)
    res["resident_after_drop"] = drop_pages(files)
    res["block_files_plain_read_gbps"] = plain_read_rate(files)
    res["resident_after_drop"] = max(res["resident_after_drop"], sum(max(resident_bytes(f), 0) for f in files))

    srv = Server(args.binary, home, args.model_dir, extra)
    srv.admin(args.model, "load")
    resident_at_request = sum(max(resident_bytes(f), 0) for f in block_files(cache))
    res["resident_at_ssd_request"] = resident_at_request
    res["ssd_s"], _, res["ssd_cached"] = srv.complete(args.model, ids)
    c_ssd = srv.cache()
    res["rest_s"], _, res["rest_cached"] = srv.complete(args.model, ids)  # paged hit: the non-restore part
    log(f"ssd: {res['ssd_s']:.3f} s (cached {res['ssd_cached']}); paged repeat {res['rest_s']:.3f} s")
    srv.stop()
    res["load_end"] = loadavg()

    # Bytes restored: the blocks loaded (the data part of each file).
    per_block = (res["block_file_bytes"] / max(res["block_files"], 1))
    loads_hot = c_hot.get("loads", 0) - cache_after_cold.get("loads", 0)
    res["hot_blocks_loaded"] = loads_hot
    res["ssd_blocks_loaded"] = c_ssd.get("loads", 0)
    res["ssd_hits_blocks"] = c_ssd.get("ssd", {}).get("hits")
    rest = min(res["rest_s"], res["hot_repeat_s"])
    hot_bytes = loads_hot * per_block
    ssd_bytes = res["ssd_blocks_loaded"] * per_block
    res["hot_restore_gbps"] = hot_bytes / max(res["hot_s"] - rest, 1e-6) / 1e9
    res["ssd_restore_gbps"] = ssd_bytes / max(res["ssd_s"] - rest, 1e-6) / 1e9
    res["cold_over_hot"] = res["cold_s"] / res["hot_s"]
    res["cold_over_ssd"] = res["cold_s"] / res["ssd_s"]
    res["cache_status_ssd_server"] = c_ssd
    print(json.dumps(res, indent=1))
    print(f"""
KV tiers, {args.tokens}-token prompt, model {args.model}
  cold prefill              {res['cold_s']:9.2f} s   (server CPU {res['cold_cpu_s']:.1f} s)
  hot-tier hit              {res['hot_s']:9.3f} s   cached {res['hot_cached']}   cold/hot {res['cold_over_hot']:.0f}x (goal >= 200x)
  SSD hit after restart     {res['ssd_s']:9.3f} s   cached {res['ssd_cached']}   cold/SSD {res['cold_over_ssd']:.0f}x (goal >= 50x)
  paged-cache repeat (rest) {rest:9.3f} s
  restore throughput        hot {res['hot_restore_gbps']:.2f} GB/s, SSD {res['ssd_restore_gbps']:.2f} GB/s
  disk read (dd O_DIRECT)   {res['disk_read_gbps_odirect']:.2f} GB/s; block files plain read {res['block_files_plain_read_gbps']:.2f} GB/s
  block files               {res['block_files']} files, {res['block_file_bytes'] / 2**20:.0f} MiB; page cache before request {resident_at_request / 2**20:.1f} MiB
  shutdown (flush)          {res['shutdown_flush_s']:.2f} s
  load average              start {res['load_start']}, after cold {res['load_after_cold']}, end {res['load_end']}""")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
