"""`llmhost serve` as a child process, for the serve benchmarks (stdlib only)."""
import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile


@contextlib.contextmanager
def running_server(binary, models_dir, device, args=(), extra="", name="bench"):
    """Starts `binary serve` on a free port over `models_dir` with a fresh --home
    (its log in HOME/serve.log), yields the server's URL, and stops it with
    SIGTERM. `args` and the words of `extra` are added to the command line; a
    server that does not start ends the program with its log's tail."""
    home = tempfile.mkdtemp(prefix="llmhost-%s-" % name)
    log = open(os.path.join(home, "serve.log"), "w")
    cmd = [binary, "serve", "--home", home, "--model-dir", models_dir, "--port", "0", "--device", device]
    cmd += list(args) + shlex.split(extra)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    m = re.search(r"listening on (http://\S+)", proc.stdout.readline())
    if not m:
        proc.kill()
        sys.exit("%s: the server did not start: %s" % (name, open(log.name).read()[-2000:]))
    try:
        yield m.group(1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
