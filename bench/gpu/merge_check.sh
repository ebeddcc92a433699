#!/usr/bin/env bash
# A short check on the lent GPU (.devcarry carried): the attention tests on the CUDA backend, the engine's
# CUDA tests, and bf16 decode after an 8,192-token prompt (Llama-3-8B shape, random weights).
set -uo pipefail
out=${OUT:-/tmp/merge-check}
mkdir -p "$out"
. bench/gpu/stage.sh
gtest_run backend_tests "$out/backend_tests.log" '*Attention*cuda*:*KeyLanes*:*PromptAttention*:*FusedLayerSteps*cuda*'
gtest_run engine_tests "$out/engine_tests.log" 'Cuda*'
"$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --device cuda --precisions auto --reps 2 \
  --steps 16 --prompt 16 --batch 1 --long-context 8192 --formats bf16 --phases long 2>&1 | grep -E 'copy bandwidth at start|after a'
