#!/usr/bin/env python3
"""`llmhost pull` end to end against a fake Hub (tests/integration/fake_hub.py).

Repos are built from tests/data/models (qwen3-tiny, llama-tiny-gguf) and
served on 127.0.0.1 (a random port) with LFS files behind a redirect to a
"CDN" on another host name. Scenarios:
  1. pull        a connection dropped mid-file is resumed with a Range request
                 within the pull; the cache layout (refs/main, blobs named by
                 SHA-256 / git blob id, relative snapshot links) and the file
                 choice (README.md and *.bin not fetched); HF_TOKEN reaches the
                 Hub but never the CDN; a second pull downloads nothing
  2. resume      --retries 0: the drop fails the pull with a message, leaves
                 blobs/<sha>.incomplete; the next pull resumes it (Range)
     locked      a .incomplete locked by another pull: refused, then pulled
  3. corrupt     a hash mismatch fails, names SHA-256, leaves no blob, no
                 .incomplete and no snapshot link
  4. errors      a missing repo (401 RepoNotFound and a plain 404), a gated
                 one without HF_TOKEN (says to set it) and with it (pulls), a
                 listed size beyond the free disk (no space left), an unknown
                 revision
  5. gguf        two GGUF files: refused without a choice; ":q4_0" picks one;
                 a split GGUF model (two parts, cut by gguf_split.py) pulled
                 whole by ":Q4_0"; a split with a part missing refused
     revision    ORG/NAME@v2 (a tag with other files) pulled beside main:
                 refs/v2 names its commit
  6. tls         HTTPS to a fake Hub with a self-signed certificate: refused
                 with the system store, pulled with SSL_CERT_FILE, refused for a
                 certificate naming another host (skipped without `openssl`)
  7. serve       `llmhost serve --model-dir DIR` lists the pulled models
                 (GET /v1/models, /api/tags, `llmhost ls`; the v2 revision as
                 ORG/NAME@v2, the split model once) and generates a few tokens
                 with each
Also: --jobs 4 downloads three files at once (the fake CDN holds each answer
until all three are asked for).
Usage: hub_pull.py LLMHOST_BINARY [--work DIR] [--keep]. Exit 0 on success, 1
on a failed check. Takes a few seconds.
"""
import argparse
import fcntl
import hashlib
import os
import re
import shutil
import ssl
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_hub import FakeHub, git_blob_id  # noqa: E402
from gguf_split import split_gguf  # noqa: E402
from llmhost_http import http  # noqa: E402

SRC = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODELS = os.path.join(SRC, "tests", "data", "models")


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def read_model(name):
    d = os.path.join(MODELS, name)
    return {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}


class Puller:
    def __init__(self, binary, hub, model_dir):
        self.binary, self.hub, self.model_dir = binary, hub, model_dir

    def run(self, ref, *args, token=None, expect_rc=0, endpoint=None, extra_env=None):
        env = dict(os.environ, HF_ENDPOINT=endpoint or "http://127.0.0.1:%d" % self.hub.port, **(extra_env or {}))
        env.pop("HF_TOKEN", None)
        if token:
            env["HF_TOKEN"] = token
        cmd = [self.binary, "pull", ref, "--model-dir", self.model_dir] + list(args)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        if p.returncode != expect_rc:
            fail("%s: exit %d (expected %d)\nstdout: %s\nstderr: %s" %
                 (" ".join(cmd), p.returncode, expect_rc, p.stdout, p.stderr))
        return p.stdout + p.stderr


def folder(model_dir, repo):
    return os.path.join(model_dir, "models--" + repo.replace("/", "--"))


def check_layout(model_dir, repo_name, repo, wanted):
    f = folder(model_dir, repo_name)
    check(open(os.path.join(f, "refs", "main")).read() == repo.commit, "refs/main holds the commit")
    snap = os.path.join(f, "snapshots", repo.commit)
    check(sorted(os.listdir(snap)) == sorted(wanted), "snapshot files %s, expected %s" %
          (sorted(os.listdir(snap)), sorted(wanted)))
    for path in wanted:
        data = repo.files[path]
        etag = hashlib.sha256(data).hexdigest() if path in repo.lfs else git_blob_id(data)
        link = os.path.join(snap, path)
        check(os.path.islink(link), "%s is a symlink" % path)
        check(os.readlink(link) == "../../blobs/" + etag, "%s links to %s" % (path, os.readlink(link)))
        check(open(link, "rb").read() == data, "%s has the repo's content" % path)
    left = [b for b in os.listdir(os.path.join(f, "blobs")) if b.endswith(".incomplete")]
    check(not left, "no .incomplete left: %s" % left)


def cdn_ranges(hub):
    return [h.get("Range") for p, h in hub.requests if p.startswith("/cdn/") and h.get("Range")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--work", default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="hub_pull_")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model_dir = os.path.join(work, "models")

    qwen = read_model("qwen3-tiny")
    qwen["README.md"] = b"# not a model file\n"
    qwen["original/junk.bin"] = b"\0" * 100
    gguf = read_model("llama-tiny-gguf")
    q4 = gguf["llama-tiny-q4_0.gguf"]
    hub = FakeHub()
    repo = hub.add_repo("test-org/qwen3-tiny", qwen)
    # Each repo's LFS content differs (the CDN finds files by their SHA-256).
    resume_repo = hub.add_repo("test-org/resume", dict(qwen, **{"model.safetensors": qwen["model.safetensors"] + b"r"}))
    hub.add_repo("test-org/corrupt", {"config.json": qwen["config.json"],
                                      "model.safetensors": qwen["model.safetensors"] + b"c"})
    gated = hub.add_repo("test-org/gated", {"config.json": b"{}", "model.safetensors": b"gated weights"}, gated=True)
    hub.add_repo("test-org/huge", {"model.safetensors": b"small"}, listed_sizes={"model.safetensors": 1 << 60})
    gguf_repo = hub.add_repo("test-org/tiny-gguf", {"tiny-Q4_0.gguf": q4, "tiny-Q8_0.gguf": b"GGUF not really",
                                                    "README.md": b"readme"})
    hub.start()
    pull = Puller(args.binary, hub, model_dir)
    wanted = ["chat_template.jinja", "config.json", "generation_config.json", "model.safetensors",
              "tokenizer.json", "tokenizer_config.json"]
    try:
        # 1. pull, with a drop mid-file resumed within the pull
        hub.drop_once.add(("test-org/qwen3-tiny", "model.safetensors"))
        out = pull.run("test-org/qwen3-tiny", token="hf_good")
        check("retrying" in out, "the drop is reported and retried:\n" + out)
        half = len(qwen["model.safetensors"]) // 2
        check("bytes=%d-" % half in cdn_ranges(hub), "resumed with Range bytes=%d- (saw %s)" % (half, cdn_ranges(hub)))
        check_layout(model_dir, "test-org/qwen3-tiny", repo, wanted)
        api = [h for p, h in hub.requests if p.startswith("/api/models/test-org/qwen3-tiny")]
        check(api and api[0].get("Authorization") == "Bearer hf_good", "HF_TOKEN sent to the Hub")
        check(not hub.cdn_saw_authorization, "no credentials sent to the CDN host")
        before = len(hub.requests)
        out = pull.run("test-org/qwen3-tiny")
        check("already downloaded" in out, "second pull reuses the blobs:\n" + out)
        check(not any(p.startswith(("/cdn/", "/raw/")) for p, _ in hub.requests[before:]), "no downloads the second time")
        print("ok: pull (drop resumed, layout, token kept from the CDN, cached)")

        # Parallel downloads: the CDN answers the 3 weight files only once all 3 asked.
        parallel = hub.add_repo("test-org/parallel", {"config.json": b"{}", "a.safetensors": b"a" * 1000,
                                                      "b.safetensors": b"b" * 1000, "c.safetensors": b"c" * 1000})
        hub.barrier_repos.add("test-org/parallel")
        hub.barrier = threading.Barrier(3)
        pull.run("test-org/parallel", "--jobs", "4")
        check(hub.concurrent_met, "three files downloaded at once")
        check_layout(model_dir, "test-org/parallel", parallel, ["config.json", "a.safetensors", "b.safetensors",
                                                                "c.safetensors"])
        print("ok: parallel downloads")

        # 2. resume across runs
        hub.drop_once.add(("test-org/resume", "model.safetensors"))
        out = pull.run("test-org/resume", "--retries", "0", expect_rc=1)
        check("pull again to resume" in out, "the failure says a new pull resumes:\n" + out)
        resume_weights = resume_repo.files["model.safetensors"]
        half = len(resume_weights) // 2
        sha = hashlib.sha256(resume_weights).hexdigest()
        partial = os.path.join(folder(model_dir, "test-org/resume"), "blobs", sha + ".incomplete")
        check(os.path.getsize(partial) == half, "the partial download is kept (%d bytes)" % os.path.getsize(partial))
        hub.requests.clear()
        pull.run("test-org/resume")
        check(cdn_ranges(hub) == ["bytes=%d-" % half], "the next pull resumes with a Range (%s)" % cdn_ranges(hub))
        check_layout(model_dir, "test-org/resume", resume_repo, wanted)
        print("ok: resume across runs")

        # A file another pull is downloading (its .incomplete locked) is left to it.
        locked = hub.add_repo("test-org/locked", {"model.safetensors": b"locked weights"})
        blobs = os.path.join(folder(model_dir, "test-org/locked"), "blobs")
        os.makedirs(blobs)
        sha = hashlib.sha256(locked.files["model.safetensors"]).hexdigest()
        with open(os.path.join(blobs, sha + ".incomplete"), "wb") as holder:
            fcntl.flock(holder, fcntl.LOCK_EX)
            out = pull.run("test-org/locked", expect_rc=1)
            check("another pull is downloading" in out, "a locked download is refused:\n" + out)
        pull.run("test-org/locked")
        check_layout(model_dir, "test-org/locked", locked, ["model.safetensors"])
        print("ok: a download in progress elsewhere is not touched")

        # 3. corrupted download
        hub.corrupt.add(("test-org/corrupt", "model.safetensors"))
        out = pull.run("test-org/corrupt", expect_rc=1)
        check("SHA-256 mismatch" in out and "discarded" in out, "hash mismatch reported:\n" + out)
        cf = folder(model_dir, "test-org/corrupt")
        blobs = os.listdir(os.path.join(cf, "blobs"))
        check(len(blobs) == 1, "only config.json's blob is kept: %s" % blobs)
        snap = os.path.join(cf, "snapshots", hub.repos["test-org/corrupt"].commit)
        check(not os.path.lexists(os.path.join(snap, "model.safetensors")), "no link to a bad file")
        print("ok: corrupted download discarded")

        # 4. errors
        out = pull.run("test-org/missing", expect_rc=1)
        check("no such model" in out, "missing repo (401 RepoNotFound):\n" + out)
        out = pull.run("test-org/http404", expect_rc=1)
        check("no such model" in out and "404" in out, "missing repo (404):\n" + out)
        out = pull.run("test-org/gated", expect_rc=1)
        check("gated or private" in out and "HF_TOKEN" in out, "gated repo says to set HF_TOKEN:\n" + out)
        out = pull.run("test-org/gated", token="hf_wrong", expect_rc=1)
        check("has no access" in out, "a wrong token is named:\n" + out)
        pull.run("test-org/gated", token="hf_good")
        check_layout(model_dir, "test-org/gated", gated, ["config.json", "model.safetensors"])
        out = pull.run("test-org/huge", expect_rc=1)
        check("no space left" in out, "free space checked before downloading:\n" + out)
        out = pull.run("test-org/qwen3-tiny@v9", expect_rc=1)
        check("no revision 'v9'" in out, "unknown revision:\n" + out)
        out = pull.run("not a repo", expect_rc=1)
        check("expected ORG/NAME" in out, "bad reference:\n" + out)
        print("ok: errors (missing, gated, no space, revision)")

        # 5. GGUF choice
        out = pull.run("test-org/tiny-gguf", expect_rc=1)
        check("2 GGUF models" in out and "tiny-Q8_0.gguf" in out, "several GGUF files refused:\n" + out)
        out = pull.run("test-org/tiny-gguf:q4_0")
        snap = os.path.join(folder(model_dir, "test-org/tiny-gguf"), "snapshots", gguf_repo.commit)
        check(os.listdir(snap) == ["tiny-Q4_0.gguf"], "only the Q4_0 file: %s" % os.listdir(snap))
        print("ok: GGUF quantization choice")

        # A split GGUF model: all parts of the chosen quantization, or a clear refusal.
        n_tensors = struct.unpack_from("<Q", q4, 8)[0]
        parts = split_gguf(q4, [3, n_tensors - 3])
        split_repo = hub.add_repo("test-org/split-gguf", {"tiny-Q4_0-00001-of-00002.gguf": parts[0],
                                                          "tiny-Q4_0-00002-of-00002.gguf": parts[1],
                                                          "tiny-Q8_0.gguf": b"GGUF not really"})
        pull.run("test-org/split-gguf:Q4_0")
        check_layout(model_dir, "test-org/split-gguf", split_repo,
                     ["tiny-Q4_0-00001-of-00002.gguf", "tiny-Q4_0-00002-of-00002.gguf"])
        hub.add_repo("test-org/split-gap", {"m-Q4_0-00001-of-00003.gguf": parts[0] + b"g",
                                            "m-Q4_0-00003-of-00003.gguf": parts[1] + b"g"})
        out = pull.run("test-org/split-gap:Q4_0", expect_rc=1)
        check("lacks part m-Q4_0-00002-of-00003.gguf" in out, "a split with a part missing is refused:\n" + out)
        print("ok: split GGUF pulled whole; a missing part refused")

        # A revision other than main, pulled beside it.
        rev_files = {k: qwen[k] for k in wanted}
        rev_main = hub.add_repo("test-org/rev", rev_files)
        rev_v2 = hub.add_revision("test-org/rev", "v2", dict(rev_files, **{"README.md": b"# v2\n"}))
        pull.run("test-org/rev")
        out = pull.run("test-org/rev@v2")
        check("pulled test-org/rev@v2 " in out, "the revision's id is reported:\n" + out)
        rf = folder(model_dir, "test-org/rev")
        check(open(os.path.join(rf, "refs", "v2")).read() == rev_v2.commit, "refs/v2 names v2's commit")
        check(open(os.path.join(rf, "refs", "main")).read() == rev_main.commit, "refs/main is kept")
        check(rev_v2.commit != rev_main.commit, "v2 is another commit")
        print("ok: revision v2 pulled beside main")

        # 6. TLS
        tls_scenario(args.binary, work, qwen)

        # 7. served
        served = hub.add_repo("test-org/served-pull", {k: qwen[k] for k in wanted})
        serve_models(args.binary, work, model_dir, hub, served)
        print("ok: serve lists and runs the pulled models; POST /api/pull fetches one while it serves")
    finally:
        hub.stop()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("hub_pull: all scenarios passed")


def make_cert(work, name, san):
    key, cert = os.path.join(work, name + ".key"), os.path.join(work, name + ".pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test",
                    "-addext", "subjectAltName=" + san, "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    return key, cert


def tls_scenario(binary, work, qwen):
    """HTTPS: the pull verifies the certificate (SSL_CERT_FILE points at the
    test's CA, a self-signed one) and that it names the host."""
    if shutil.which("openssl") is None:
        print("skip: tls (no openssl command)")
        return
    good_key, good = make_cert(work, "good", "DNS:localhost,IP:127.0.0.1")
    bad_key, bad = make_cert(work, "bad", "DNS:example.invalid")
    model_dir = os.path.join(work, "tls-models")
    files = {k: qwen[k] for k in ("config.json", "model.safetensors")}
    for key, cert, expect in ((good_key, good, 0), (bad_key, bad, 1)):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        hub = FakeHub(scheme="https", cdn_host="127.0.0.1")
        hub.add_repo("test-org/tls", files)
        hub.start(ctx)
        try:
            pull = Puller(binary, hub, model_dir)
            endpoint = "https://localhost:%d" % hub.port
            if expect == 0:
                out = pull.run("test-org/tls", endpoint=endpoint, expect_rc=1)  # the system store lacks the test CA
                check("TLS certificate rejected" in out, "an unknown CA is refused:\n" + out)
                pull.run("test-org/tls", endpoint=endpoint, extra_env={"SSL_CERT_FILE": good})
                check(any(p.startswith("/cdn/") for p, _ in hub.requests), "the CDN was reached over https")
            else:
                out = pull.run("test-org/tls", endpoint=endpoint, extra_env={"SSL_CERT_FILE": bad}, expect_rc=1)
                check("TLS certificate rejected" in out and "mismatch" in out,
                      "a certificate for another host is refused:\n" + out)
        finally:
            hub.stop()
    print("ok: tls (verified against SSL_CERT_FILE, host name checked)")


def ndjson_post(url, body, timeout=120):
    import json
    import urllib.request
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, [json.loads(line) for line in r.read().decode().splitlines() if line.strip()]
    except urllib.error.HTTPError as e:
        return e.code, [json.loads(e.read().decode() or "{}")]


def serve_models(binary, work, model_dir, hub, served):
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    log = open(os.path.join(work, "serve.log"), "w")
    env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:%d" % hub.port)
    proc = subprocess.Popen([binary, "serve", "--home", home, "--model-dir", model_dir, "--port", "0",
                             "--cache-mode", "off"], stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        check(m is not None, "serve started: %r (see %s)" % (line, log.name))
        url = m.group(1)
        st, j = http(url + "/v1/models")
        ids = sorted(d["id"] for d in j["data"]) if st == 200 else []
        wanted = ("test-org/qwen3-tiny", "test-org/tiny-gguf", "test-org/split-gguf", "test-org/rev", "test-org/rev@v2")
        for want in wanted:
            check(want in ids, "GET /v1/models lists %s: %s" % (want, ids))
        check(not any("00002-of" in i for i in ids), "a split model is listed once: %s" % ids)
        st, j = http(url + "/api/tags")
        tags = [m["name"] for m in j["models"]] if st == 200 else []
        check("test-org/rev@v2" in tags and "test-org/split-gguf" in tags, "GET /api/tags lists them: %s" % tags)
        ls = subprocess.run([binary, "ls", "--url", url], capture_output=True, text=True, timeout=60)
        check(ls.returncode == 0 and "test-org/rev@v2" in ls.stdout, "llmhost ls lists the revision:\n" + ls.stdout)
        for model in wanted:
            st, j = http(url + "/v1/completions", {"model": model, "prompt": "Hello", "max_tokens": 4,
                                                   "temperature": 0}, timeout=120)
            check(st == 200 and j["usage"]["completion_tokens"] > 0, "%s generates: %s %s" % (model, st, j))
        # Ollama's /api/pull: progress lines, then success, and the model is served at once.
        st, lines = ndjson_post(url + "/api/pull", {"model": "test-org/served-pull"})
        check(st == 200 and lines and lines[0].get("status") == "pulling manifest", "pull progress: %s" % lines[:3])
        check(any(x.get("status", "").startswith("pulling model.safetensors") for x in lines), "file lines: %s" % lines)
        check(lines[-1].get("status") == "success" and lines[-1].get("commit") == served.commit, "success: %s" % lines[-1])
        st, j = http(url + "/v1/models")
        check("test-org/served-pull" in [d["id"] for d in j["data"]], "the pulled model is listed at once")
        st, j = http(url + "/v1/completions", {"model": "test-org/served-pull", "prompt": "Hi", "max_tokens": 2})
        check(st == 200, "the pulled model generates: %s %s" % (st, j))
        # Errors: streamed as an error line; whole as a status and {"error": "..."}.
        st, lines = ndjson_post(url + "/api/pull", {"model": "test-org/missing"})
        check(st == 200 and "error" in lines[-1] and "test-org/missing" in lines[-1]["error"], "missing: %s" % lines)
        st, lines = ndjson_post(url + "/api/pull", {"model": "test-org/missing", "stream": False})
        check(st == 404 and isinstance(lines[0].get("error"), str), "missing, whole: %s %s" % (st, lines))
        st, lines = ndjson_post(url + "/admin/api/models/pull", {"model": "not a repo"})
        check(st == 400, "a bad name is a 400: %s %s" % (st, lines))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()


if __name__ == "__main__":
    main()
