#!/usr/bin/env python3
"""Structured-output speed and exactness: runs `llmhost grammar-check` over a case
suite on each vocabulary and prints compile times, the per-token mask-time
distribution (all masks, and the "cold" ones that filled a state's cache entry
first) and wrong acceptances / rejections, beside issue 16's anchors.

  bench/grammar_bench.py [--binary build/llmhost] [--cases tests/data/grammar/cases.jsonl]
                         [--tokenizer PATH ...] [--max-whitespace -1] [--max-instances N] [--check]

Tokenizers default to ../shared/reference/tokenizers/tok_llama3.json and tok_qwen3.json.
--max-instances keeps the first N instances of each case (every case still compiles).
--check exits 1 on a wrong acceptance or rejection, a matcher error, or a compile error
the suite expects that did not come (the CI use). A schema that does not compile though the
suite has no error for it is a figure (schemas handled), listed but not a failure.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SHARED = os.environ.get("LLMHOST_SHARED_DIR", os.path.join(ROOT, "..", "shared"))

# (figure, LLGuidance on JSONSchemaBench / MaskBench, issue 16's goal), in microseconds.
ANCHORS = {"mask avg": (64, 50), "mask p99": (530, 500), "compile p50": (1000, 1000)}


def percentile(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, -(-len(s) * p // 100) - 1))
    return s[int(k)]


def distribution(values):
    if not values:
        return "none"
    avg = sum(values) / len(values)
    return "n=%d avg %.1f  p50 %.1f  p90 %.1f  p99 %.1f  max %.1f" % (
        len(values), avg, percentile(values, 50), percentile(values, 90), percentile(values, 99), max(values))


def load_cases(path, max_instances):
    cases = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    if max_instances is not None:
        for c in cases:
            c["instances"] = c.get("instances", [])[:max_instances]
    return cases


def run(binary, tokenizer, cases, max_whitespace):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for c in cases:
            f.write(json.dumps(c) + "\n")
        path = f.name
    try:
        start = time.monotonic()
        p = subprocess.run([binary, "grammar-check", "--tokenizer", tokenizer, "--cases", path,
                            "--max-whitespace", str(max_whitespace)], capture_output=True, text=True)
        wall = time.monotonic() - start
    finally:
        os.unlink(path)
    if p.returncode != 0:
        sys.exit("grammar-check failed (exit %d): %s" % (p.returncode, p.stderr))
    return [json.loads(line) for line in p.stdout.splitlines()], p.stderr.strip(), wall


def report(name, cases, results, stderr, wall):
    """Prints one vocabulary's figures; returns the number of failures --check counts."""
    compile_us, masks, cold, warm = [], [], [], []
    compiled = errors = expected_errors = missed_errors = 0
    if len(results) != len(cases):
        sys.exit("grammar-check answered %d of %d cases" % (len(results), len(cases)))
    wrong_accept, wrong_reject, instance_errors, not_handled = [], [], [], []
    for case, out in zip(cases, results):
        assert case["id"] == out["id"], (case["id"], out["id"])
        if "error" in out:
            errors += 1
            if "error" in case:
                expected_errors += 1
            else:
                not_handled.append((case["id"], out["error"]))
            continue
        compiled += 1
        compile_us.append(out["compile_us"])
        if "error" in case:
            missed_errors += 1
        for inst, got in zip(case["instances"], out["instances"]):
            masks.extend(got["mask_us"])
            cold_at = set(got["cold_masks"])
            for i, t in enumerate(got["mask_us"]):
                (cold if i in cold_at else warm).append(t)
            if "error" in got:
                instance_errors.append((case["id"], inst["text"], got["error"]))
            if got["accepted"] and not inst["valid"]:
                wrong_accept.append((case["id"], inst["text"]))
            if not got["accepted"] and inst["valid"]:
                wrong_reject.append((case["id"], inst["text"]))
    should_compile = sum(1 for c in cases if "error" not in c)
    print("== %s (%s; grammar-check wall %.1f s)" % (name, stderr.splitlines()[-1] if stderr else "", wall))
    print("cases %d: compiled %d, compile errors %d; handled %d of the %d the suite expects to compile, "
          "%d expected errors, %d of them missed" % (len(cases), compiled, errors, should_compile - len(not_handled),
                                                     should_compile, expected_errors + missed_errors, missed_errors))
    print("compile us: n=%d p50 %.0f  p90 %.0f  p99 %.0f  max %.0f" % (
        len(compile_us), percentile(compile_us, 50), percentile(compile_us, 90), percentile(compile_us, 99),
        max(compile_us)) if compile_us else "compile us: none")
    print("mask us, all:  " + distribution(masks))
    print("mask us, cold: " + distribution(cold))
    print("mask us, warm: " + distribution(warm))
    print("wrong acceptances %d, wrong rejections %d, matcher errors %d" % (
        len(wrong_accept), len(wrong_reject), len(instance_errors)))
    for what, items in (("not compiled", not_handled), ("wrong acceptance", wrong_accept),
                        ("wrong rejection", wrong_reject), ("matcher error", instance_errors)):
        for item in items[:10]:
            print("  %s: %s" % (what, " | ".join(str(x)[:120] for x in item)))
    if masks and compile_us:
        avg = sum(masks) / len(masks)
        figures = {"mask avg": avg, "mask p99": percentile(masks, 99), "compile p50": percentile(compile_us, 50)}
        print("against the anchors (us):  " + ";  ".join(
            "%s %.1f (LLGuidance ~%d, goal <= %d)" % (k, figures[k], *ANCHORS[k]) for k in ANCHORS))
    return len(wrong_accept) + len(wrong_reject) + len(instance_errors) + missed_errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "llmhost"))
    ap.add_argument("--cases", default=os.path.join(ROOT, "tests", "data", "grammar", "cases.jsonl"))
    ap.add_argument("--tokenizer", action="append",
                    help="tokenizer.json or model dir (repeatable; default: tok_llama3 and tok_qwen3)")
    ap.add_argument("--max-whitespace", type=int, default=-1,
                    help="the suite's texts are pretty-printed: -1 (any run) judges validity alone")
    ap.add_argument("--max-instances", type=int, default=None)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    tokenizers = a.tokenizer or [os.path.join(SHARED, "reference", "tokenizers", n)
                                 for n in ("tok_llama3.json", "tok_qwen3.json")]
    missing = [t for t in tokenizers if not os.path.exists(t)]
    if missing:
        print("grammar_bench: %s absent: skipped" % ", ".join(missing))
        return 77
    cases = load_cases(a.cases, a.max_instances)
    failures = 0
    for t in tokenizers:
        results, stderr, wall = run(a.binary, t, cases, a.max_whitespace)
        failures += report(os.path.basename(t.rstrip("/")), cases, results, stderr, wall)
    return 1 if a.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
