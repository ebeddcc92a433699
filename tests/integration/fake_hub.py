"""A fake Hugging Face Hub for the pull tests (stdlib only).

Speaks the endpoints `llmhost pull` uses:
  GET /api/models/ORG/NAME/revision/REV?blobs=true   model info (sha, siblings
      with size, blobId, lfs.sha256); 404 + X-Error-Code RepoNotFound for an
      unknown repo, 401 + GatedRepo for a gated one without the right token
  GET /ORG/NAME/resolve/COMMIT/PATH   LFS files: 302 to an absolute URL on
      another host name (`cdn_host`, "localhost" by default: the CDN) with
      X-Linked-Etag; other files: 307 to a relative URL under /raw/ that
      answers with a chunked body and an ETag
  GET /cdn/SHA256    the content, with Range support (206 + Content-Range)

`add_revision` gives a repo another branch or tag with its own files and
commit. Faults, set per (repo, path): `drop_once` sends the headers and half the
bytes of the first request, then closes the connection; `corrupt` serves
the content with one byte flipped. `requests` logs (path, headers) of every
request; `cdn_saw_authorization` turns true if a credential reached the CDN;
the CDN requests of `barrier_repos` wait for each other at `barrier`; the CDN
spreads each body of a repo in `slow` over that many seconds (progress to watch).
"""
import hashlib
import http.server
import json
import threading
import time
import urllib.parse


class Repo:
    def __init__(self, files, lfs_suffixes, listed_sizes):
        self.files = files  # path -> bytes
        self.commit = hashlib.sha1(b"".join(k.encode() + v for k, v in sorted(files.items()))).hexdigest()
        self.lfs = {p for p in files if p.endswith(lfs_suffixes)}
        self.listed_sizes = listed_sizes  # path -> size to announce instead of the real one


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    def __init__(self, token="hf_good", scheme="http", cdn_host="localhost"):
        self.scheme = scheme
        self.cdn_host = cdn_host  # another name of 127.0.0.1 than the endpoint's
        self.repos = {}
        self.gated = set()
        self.token = token
        self.drop_once = set()
        self.corrupt = set()
        self.requests = []
        self.cdn_saw_authorization = False
        self.by_sha = {}  # sha256 -> (repo name, Repo, path)
        self.revisions = {}  # repo name -> {branch or tag: Repo}
        self.lock = threading.Lock()
        self.server = None
        # Repos whose CDN requests wait until this many are in flight (proof
        # of parallel downloads); concurrent_met tells whether they all met.
        self.barrier_repos = set()
        self.barrier = None
        self.concurrent_met = True
        self.slow = {}  # repo name -> seconds each CDN body takes

    def add_repo(self, name, files, lfs_suffixes=(".safetensors", ".gguf"), gated=False, listed_sizes=None):
        repo = Repo(files, lfs_suffixes, listed_sizes or {})
        self.repos[name] = repo
        if gated:
            self.gated.add(name)
        self.index_lfs(name, repo)
        return repo

    def add_revision(self, name, revision, files, lfs_suffixes=(".safetensors", ".gguf")):
        repo = Repo(files, lfs_suffixes, {})
        self.revisions.setdefault(name, {})[revision] = repo
        self.index_lfs(name, repo)
        return repo

    def index_lfs(self, name, repo):
        for p in repo.lfs:
            self.by_sha[hashlib.sha256(repo.files[p]).hexdigest()] = (name, repo, p)

    def at_commit(self, name, commit):
        """The repo's files at a commit, None when it has no such commit."""
        for repo in [self.repos[name]] + list(self.revisions.get(name, {}).values()):
            if repo.commit == commit:
                return repo
        return None

    def start(self, ssl_context=None):
        """Serves on 127.0.0.1 (a random port), over TLS with `ssl_context`."""
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                with hub.lock:
                    hub.requests.append((self.path, dict(self.headers)))
                self.close_connection = True
                try:
                    hub.route(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if ssl_context is not None:
            self.server.socket = ssl_context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.server.server_address[1]

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    @property
    def port(self):
        return self.server.server_address[1]

    # --- routing ---
    def route(self, h):
        url = urllib.parse.urlsplit(h.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")[1:]]
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
            return self.model_info(h, parts[2] + "/" + parts[3], "/".join(parts[5:]))
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(h, parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]))
        if parts[0] == "cdn" and len(parts) == 2:
            return self.cdn(h, parts[1])
        if parts[0] == "raw" and len(parts) >= 5:
            return self.raw(h, parts[1] + "/" + parts[2], parts[3], "/".join(parts[4:]))
        self.send(h, 404, b"no route", {"X-Error-Code": "EntryNotFound"})

    def send(self, h, status, body, headers=None):
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(body)

    def check_access(self, h, name):
        if name not in self.repos:
            self.send(h, 401, b'{"error":"Repository not found"}', {"X-Error-Code": "RepoNotFound"})
            return False
        if name in self.gated and h.headers.get("Authorization") != "Bearer " + self.token:
            self.send(h, 401, b'{"error":"Access to this model is restricted"}', {"X-Error-Code": "GatedRepo"})
            return False
        return True

    def model_info(self, h, name, revision):
        if name == "test-org/http404":
            return self.send(h, 404, b"Not Found")
        if not self.check_access(h, name):
            return
        repo = self.revisions.get(name, {}).get(revision) or self.at_commit(name, revision)
        if revision == "main":
            repo = self.repos[name]
        if repo is None:
            return self.send(h, 404, b'{"error":"Invalid rev id"}', {"X-Error-Code": "RevisionNotFound"})
        siblings = []
        for path, data in sorted(repo.files.items()):
            size = repo.listed_sizes.get(path, len(data))
            s = {"rfilename": path, "size": size, "blobId": git_blob_id(data)}
            if path in repo.lfs:
                s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": size, "pointerSize": 134}
            siblings.append(s)
        body = json.dumps({"id": name, "sha": repo.commit, "siblings": siblings}).encode()
        self.send(h, 200, body, {"Content-Type": "application/json"})

    def resolve(self, h, name, commit, path):
        if not self.check_access(h, name):
            return
        repo = self.at_commit(name, commit)
        if repo is None or path not in repo.files:
            return self.send(h, 404, b"Entry not found", {"X-Error-Code": "EntryNotFound"})
        data = repo.files[path]
        if path in repo.lfs:
            sha = hashlib.sha256(data).hexdigest()
            location = "%s://%s:%d/cdn/%s?expires=1" % (self.scheme, self.cdn_host, self.port, sha)
            self.send(h, 302, b"", {"Location": location, "X-Linked-Etag": '"%s"' % sha,
                                    "X-Repo-Commit": repo.commit, "X-Linked-Size": str(len(data))})
        else:
            quoted = urllib.parse.quote(path)
            self.send(h, 307, b"", {"Location": "/raw/%s/%s/%s" % (name, commit, quoted),
                                    "X-Repo-Commit": repo.commit})

    def raw(self, h, name, commit, path):
        data = self.at_commit(name, commit).files[path]
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("ETag", '"%s"' % git_blob_id(data))
        h.send_header("Connection", "close")
        h.end_headers()
        for i in range(0, len(data), 1000):
            piece = data[i:i + 1000]
            h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        h.wfile.write(b"0\r\n\r\n")

    def cdn(self, h, sha_query):
        sha = sha_query.split("?")[0]
        if "Authorization" in h.headers:
            self.cdn_saw_authorization = True
        if sha not in self.by_sha:
            return self.send(h, 404, b"no such object")
        name, repo, path = self.by_sha[sha]
        if name in self.barrier_repos:
            try:
                self.barrier.wait(timeout=5)
            except threading.BrokenBarrierError:
                self.concurrent_met = False
        data = repo.files[path]
        if (name, path) in self.corrupt:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        start = 0
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                return self.send(h, 416, b"", {"Content-Range": "bytes */%d" % len(data)})
            h.send_response(206)
            h.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            h.send_response(200)
        body = data[start:]
        h.send_header("Content-Length", str(len(body)))
        h.send_header("ETag", '"%s"' % sha)
        h.send_header("Connection", "close")
        h.end_headers()
        with self.lock:
            drop = (name, path) in self.drop_once
            self.drop_once.discard((name, path))
        if drop:
            h.wfile.write(body[:len(body) // 2])
            h.wfile.flush()
            return  # the handler closes the connection mid-body
        if name in self.slow:
            return self.send_slowly(h, body, self.slow[name])
        h.wfile.write(body)

    def send_slowly(self, h, body, seconds, interval=0.05):
        # A piece every `interval` seconds, so a client that stops reading notices soon.
        pieces = max(1, int(seconds / interval))
        step = max(1, -(-len(body) // pieces))
        for i in range(0, len(body), step):
            h.wfile.write(body[i:i + step])
            h.wfile.flush()
            time.sleep(interval)
