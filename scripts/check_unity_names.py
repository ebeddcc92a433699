#!/usr/bin/env python3
"""Unity builds put up to eight sources of a layer into one translation unit
(cmake/Layers.cmake). A name a source keeps to itself (in an anonymous
namespace, or static) is then seen by the others of its unit: the same name
and signature fails the build, but an overload with other parameters could
quietly take another file's call. This check finds internal names defined by
two sources of one layer and fails unless each such source is in
LLMHOST_UNITY_SKIP (compiled alone). The scan is textual: definitions at the
start of a line inside `namespace {` or marked static."""
import collections
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Aliases (one alias twice is allowed; two different ones fail the build, not
# quietly) and words the scan picks up.
IGNORED = {"std", "final", "namespace", "avx2", "fs", "Clock", "Json"}
DEF = re.compile(r"^(?:template\s*<[^>]*>\s*)?(?:static\s+|inline\s+|constexpr\s+|const\s+|thread_local\s+)*"
                 r"(?:struct|class|enum class|enum|using)?\s*([\w:<>,\*&\s]+?)\s*\b([A-Za-z_]\w*)\s*(\(|=|;|\{|\[|:)")
TYPE = re.compile(r"^(?:struct|class|enum class|enum|using)\s+(\w+)")


def internal_names(path):
    names, depth, anon = set(), 0, None
    with open(path, errors="replace") as f:
        for line in f:
            s = line.rstrip("\n")
            if re.match(r"^namespace\s*\{", s):
                anon = depth
            if (anon is not None or s.startswith("static ")) and not s.startswith((" ", "\t", "}", "#", "//")):
                if not s.startswith(("namespace", "return")):
                    m = DEF.match(s)
                    if m:
                        names.add(m.group(2))
                m = TYPE.match(s)
                if m:
                    names.add(m.group(1))
            depth += s.count("{") - s.count("}")
            if anon is not None and depth <= anon and "}" in s:
                anon = None
    return names


def skip_list():
    text = open(os.path.join(ROOT, "cmake", "Layers.cmake")).read()
    m = re.search(r"set\(LLMHOST_UNITY_SKIP\s*(.*?)\)", text, re.S)
    return set(m.group(1).split()) if m else set()


def main():
    skip = skip_list()
    missing = []
    src = os.path.join(ROOT, "src")
    for layer in sorted(os.listdir(src)):
        if layer == "backend" or not os.path.isdir(os.path.join(src, layer)):
            continue
        where = collections.defaultdict(list)
        for dirpath, _, files in os.walk(os.path.join(src, layer)):
            for name in sorted(files):
                if name.endswith(".cpp"):
                    path = os.path.join(dirpath, name)
                    for n in internal_names(path):
                        where[n].append(os.path.relpath(path, src))
        for n, files in sorted(where.items()):
            if len(files) > 1 and n not in IGNORED:
                for f in files:
                    if f not in skip:
                        missing.append(f"{f}: `{n}` is also internal to {', '.join(x for x in files if x != f)}")
    for line in missing:
        print(line)
    if missing:
        print("rename the helper, or add the file to LLMHOST_UNITY_SKIP in cmake/Layers.cmake")
        return 1
    print(f"unity names: ok ({len(skip)} sources compiled alone)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
