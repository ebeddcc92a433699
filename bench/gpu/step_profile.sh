#!/usr/bin/env bash
# On the lent GPU machine, from the repository root with .devcarry carried
# (bench/gpu/pack.sh): every kernel's time in a batched bf16 decode of the
# Llama-3-8B shape (random weights), graphs off, through ncu (one metric, one
# pass a kernel), as CSV in $OUT/steps.csv; bench/gpu/step_summary.py sums it
# by kernel over the decode steps.
#   BATCH=32 PROMPT=16 STEPS=2 bench/gpu/step_profile.sh
# PRECISION= (auto), MORE= (more model_bench flags: --prefill-tokens 512).
set -uo pipefail
out=${OUT:-/tmp/step-profile}
mkdir -p "$out"
. bench/gpu/stage.sh
env ${PROFILE_ENV:-} LLMHOST_CUDA_GRAPHS=off ncu --csv --metrics gpu__time_duration.sum \
  "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --device cuda --precisions "${PRECISION:-auto}" \
  --formats ${FORMAT:-bf16} --group-size 64 --reps 1 --steps "${STEPS:-2}" --batch "${BATCH:-32}" --prompt "${PROMPT:-16}" \
  --prefill-reps 1 --phases "${PHASES:-decode-batch}" ${MORE:-} >"$out/steps.csv" 2>"$out/ncu.err"
echo "ncu rc=$?, $(grep -c gpu__time_duration "$out/steps.csv") kernels"
