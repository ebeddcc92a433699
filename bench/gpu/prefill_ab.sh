#!/usr/bin/env bash
# On the lent GPU machine, from the repository root with .devcarry carried
# (bench/gpu/pack.sh with model_bench): bf16 prefill of the Llama-3-8B shape
# (random weights) at `auto` for each prompt size in TOKENS under each of
# VARIANTS (space-separated; a variant is VAR=VALUE[,VAR=VALUE...], DEFAULT=1
# for the defaults), one line a run:
#   TOKENS="512 2048 8192" VARIANTS="DEFAULT=1 LLMHOST_CUBLASLT_PLAN_ROWS=512 LLMHOST_CUBLASLT_PLANS=buckets" \
#     bench/gpu/prefill_ab.sh
# PRECISION= (auto), REPS= (prefill reps, 2), RUN_TIMEOUT= (s a run, 60).
set -uo pipefail
out=${OUT:-/tmp/prefill-ab}
mkdir -p "$out"
. bench/gpu/stage.sh
for t in ${TOKENS:-512 2048 8192}; do
  for v in ${VARIANTS:-DEFAULT=1}; do
    log="$out/prefill_${t}_$(echo "$v" | tr -c 'A-Za-z0-9_\n' '_').log"
    timeout "${RUN_TIMEOUT:-60}" env ${v//,/ } "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 \
      --device cuda --formats bf16 --precisions "${PRECISION:-auto}" --reps 1 --prefill-reps "${REPS:-2}" \
      --phases prefill --prefill-tokens "$t" >"$log" 2>&1
    rc=$?
    echo "$t tokens, $v: $(grep -oE ': prefill [0-9.]+' "$log" | head -1 | grep -oE '[0-9.]+$') tok/s (rc $rc)"
  done
done
