"""JSON over HTTP for the Python integration tests and benchmarks (stdlib only)."""
import json
import urllib.error
import urllib.request


def http(url, body=None, timeout=300, method=None):
    """Sends `body` as JSON (GET without one) and returns (status, decoded JSON
    body); an error body that is not JSON comes back as text."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw or b"null")
        except ValueError:
            return e.code, raw.decode(errors="replace")
