#!/usr/bin/env bash
# On the lent GPU machine, from the repository root with .devcarry carried
# (bench/gpu/pack.sh): every kernel's time in a batched bf16 decode of the
# Llama-3-8B shape (random weights), graphs off, through ncu (one metric, one
# pass a kernel), as CSV in $OUT/steps.csv; bench/gpu/step_summary.py sums it
# by kernel over the decode steps.
#   BATCH=32 PROMPT=16 STEPS=2 bench/gpu/step_profile.sh
set -uo pipefail
stage=/tmp/llmhost-stage
out=${OUT:-/tmp/step-profile}
mkdir -p "$stage" "$out"
[ -x "$stage/bin/model_bench" ] || tar -C "$stage" -xJf .devcarry/stage.tar.xz || exit 1
export LD_LIBRARY_PATH=$stage/lib
cfg=/tmp/llama8b.json
cat >"$cfg" <<'JSON'
{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
 "intermediate_size": 14336, "vocab_size": 32000, "tie_word_embeddings": false, "max_position_embeddings": 16384}
JSON
env ${PROFILE_ENV:-} LLMHOST_CUDA_GRAPHS=off ncu --csv --metrics gpu__time_duration.sum \
  "$stage/bin/model_bench" --random-config "$cfg" --arch llama --seed 1 --device cuda --precisions auto \
  --formats ${FORMAT:-bf16} --group-size 64 --reps 1 --steps "${STEPS:-2}" --batch "${BATCH:-32}" --prompt "${PROMPT:-16}" \
  --phases decode-batch >"$out/steps.csv" 2>"$out/ncu.err"
echo "ncu rc=$?, $(grep -c gpu__time_duration "$out/steps.csv") kernels"
