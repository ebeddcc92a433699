#!/usr/bin/env python3
"""Checks that includes between src/ layers point one way (lower layers never
include higher ones). Prints each violation; exits 1 if there is any."""
import os, re, sys

# Lowest first. A file in layer i may include headers of layers 0..i only.
LAYERS = ["util", "formats", "tokenizer", "grammar", "chat", "backend", "model", "kv", "engine", "pool",
          "server", "cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    rank = {name: i for i, name in enumerate(LAYERS)}
    bad = 0
    checked = 0
    for layer in os.listdir(root):
        if layer not in rank:
            print("unknown layer folder src/%s: add it to LAYERS in %s" % (layer, __file__))
            bad += 1
            continue
        for dirpath, _, files in os.walk(os.path.join(root, layer)):
            for f in files:
                if not f.endswith((".h", ".cpp", ".cu", ".cuh")):
                    continue
                path = os.path.join(dirpath, f)
                checked += 1
                for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                    m = INCLUDE.match(line)
                    if m and m.group(1) in rank and rank[m.group(1)] > rank[layer]:
                        print("%s:%d: layer '%s' includes higher layer '%s'" %
                              (os.path.relpath(path, root), n, layer, m.group(1)))
                        bad += 1
    print("check_layers: %d files, %d violations" % (checked, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
