#!/usr/bin/env python3
"""Sums bench/gpu/step_profile.sh's CSV by kernel over the decode steps.

The decode steps are the launches from the first batched GEMV on (--first:
MmaWide past 8 sequences; the prompts' rows go to cuBLASLt); the per-step
figures divide by the steps model_bench ran there (--steps and its warm-up).
  python3 bench/gpu/step_summary.py steps.csv --steps 2
"""
import argparse
import collections
import csv
import re


def family(name):
    name = re.sub(r"\(.*", "", name)  # no parameter list
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"llmhost::cuda::(\w+::)*", "", name)
    name = re.sub(r"<unnamed>::", "", name)
    return name.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--steps", type=int, required=True, help="decode steps the run timed (model_bench --steps, reps 1)")
    ap.add_argument("--first", default="MmaWide", help="a kernel name part that marks the first decode launch")
    args = ap.parse_args()
    rows = []
    with open(args.csv, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "ns")
        ns = v * {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}.get(unit, 1)
        rows.append((r["Kernel Name"], ns))
    start = next((i for i, (k, _) in enumerate(rows) if args.first in k), 0)
    decode = rows[start:]
    by = collections.defaultdict(lambda: [0, 0.0])
    for k, ns in decode:
        f = by[family(k)]
        f[0] += 1
        f[1] += ns
    total = sum(ns for _, ns in decode)
    # model_bench runs a warm-up step before the timed ones: the launches
    # from the first decode launch on cover steps + 1 steps.
    steps = args.steps + 1
    print(f"{len(decode)} launches from the first decode launch, {steps} steps: {total / steps / 1e3:.1f} us a step of kernel time")
    print("| kernel | launches a step | us a step | share |")
    print("|---|---|---|---|")
    for name, (n, ns) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"| `{name[:70]}` | {n / steps:.1f} | {ns / steps / 1e3:.1f} | {100 * ns / total:.1f}% |")


if __name__ == "__main__":
    main()
