#!/usr/bin/env python3
"""Runs the fake Hub (fake_hub.py) for the node tests, which cannot import it.

Usage: fake_hub_serve.py [--repo NAME=DIR[+SUFFIX]]... [--slow NAME=SECONDS]...
Each --repo serves the files of DIR (e.g. tests/data/models/qwen3-tiny) as
repository NAME; +SUFFIX appends those bytes to its weights, since the CDN finds
files by their SHA-256 and two repos must not share one. --slow spreads each
CDN body of NAME over SECONDS. Prints "port N" once serving on 127.0.0.1 and
serves until stdin closes.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_hub import FakeHub  # noqa: E402


def read_repo(spec):
    name, _, where = spec.partition("=")
    folder, _, suffix = where.partition("+")
    files = {f: open(os.path.join(folder, f), "rb").read() for f in sorted(os.listdir(folder))}
    files = {f: data + suffix.encode() if f.endswith(".safetensors") else data for f, data in files.items()}
    return name, files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--slow", action="append", default=[])
    args = ap.parse_args()
    hub = FakeHub()
    for spec in args.repo:
        hub.add_repo(*read_repo(spec))
    for spec in args.slow:
        name, _, seconds = spec.partition("=")
        hub.slow[name] = float(seconds)
    print("port %d" % hub.start(), flush=True)
    sys.stdin.read()
    hub.stop()


if __name__ == "__main__":
    main()
