#!/usr/bin/env bash
# On the lent GPU (.devcarry carried): the MLX int8-activation GEMV
# (cuda/matmul_int8.cuh) checked and timed. The CUDA MatMul and attention
# tests, then MLX 4-bit g64 decode of the Llama-3-8B shape (random weights) at
# 1, 8 and 32 sequences with the int8 kernel (the default), without the
# quantizer's early trigger (LLMHOST_CUDA_INT8_EARLY=off) and with
# LLMHOST_CUDA_MLX_INT8=off (the tensor-core GEMV), alternated; decode b1
# after 8,192 tokens; prefill 512 of MLX 4-bit and FP8 with their weights
# widened for cuBLASLt and without (LLMHOST_CUDA_WIDEN_PROMPT=off); the
# issue's MLX 4-bit figures; an ncu of one step's int8 kernels.
#   NCU=0 to skip the profile; ROUNDS (default 2); FIGURES=0 to skip the figures; QUICK_AB and TRIALS
#   (below): settings timed against the default.
set -uo pipefail
out=${OUT:-/tmp/int8-check}
mkdir -p "$out"
. bench/gpu/stage.sh
gtest_run backend_tests "$out/backend_tests.log" '*Int8Mlx*:*WidenPrompt*:*MmaMlx*:*MatMul*cuda*:*FusedLayerSteps*cuda*:*KeyLanes*:*Attention*cuda*'
grep -E 'Failure|Expected|Which is|vs the CPU|vs exact' "$out/backend_tests.log" | head -30
gtest_run engine_tests "$out/engine_tests.log" 'Cuda*'
gtest_run model_tests "$out/model_tests.log" '*Cuda*:*RandomModel*'
mb() {  # mb LABEL ENV... -- model_bench args
  local label=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --group-size 64 --device cuda \
    --precisions auto --reps 3 --formats mlx4 "$@" >"$out/mb.log" 2>&1
  echo "| $label | $* | $(grep -E 'tok/s' "$out/mb.log" | grep -vE '^\|' | head -2 | tr '\n' ' ' | cut -c1-200) |" | tee -a "$out/table.md"
  cat "$out/mb.log" >>"$out/model_bench.log"
}
# TRIALS="ENV=VALUE ...": the int8 tests under each setting, then decode (TRIAL_BATCH: "1" or e.g. "2 4",
# TRIAL_PHASES: model_bench --phases) under each against the default, two rounds alternated.
if [ -n "${TRIALS:-}" ]; then
  for v in $TRIALS; do
    env "$v" "$B/backend_tests" --gtest_filter='*Int8Mlx*' >"$out/trial_tests.log" 2>&1
    echo "$v backend_tests rc=$?: $(grep -E '^\[  PASSED|^\[  FAILED' "$out/trial_tests.log" | tr '\n' ' ')"
  done
  for round in 1 2; do
    for v in LLMHOST_CUDA_MLX_INT8=on $TRIALS; do
      for b in ${TRIAL_BATCH:-1}; do
        mb "$v r$round" "$v" -- --prompt 512 --steps 32 --batch $b --phases ${TRIAL_PHASES:-decode1}
      done
    done
  done
  if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
    for v in LLMHOST_CUDA_MLX_INT8=on $TRIALS; do
      env "$v" LLMHOST_CUDA_GRAPHS=off ncu --clock-control none --kernel-name regex:'Int8Mlx' --launch-skip 20 --launch-count 4 \
        --section SpeedOfLight --section Occupancy \
        "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --group-size 64 --device cuda --precisions auto \
        --reps 1 --formats mlx4 --prompt 16 --steps 2 --batch 1 --phases decode1 >"$out/ncu.log" 2>&1
      echo "== ncu $v"
      grep -E 'Duration|DRAM Throughput|Registers Per|Achieved Occupancy' "$out/ncu.log" | sed -E 's/ +/ /g' | cut -c1-100 | head -16
    done
  fi
  exit 0
fi
if [ -n "${QUICK_AB:-}" ]; then  # QUICK_AB="ENV=VALUE": decode b1 / 8 sequences, that setting against the default, 3 rounds
  for round in 1 2 3; do
    for v in LLMHOST_CUDA_MLX_INT8=on "$QUICK_AB"; do
      mb "$v r$round" "$v" -- --prompt 512 --steps 32 --batch 8 --phases decode1,decode-batch
    done
  done
  exit 0
fi
for round in $(seq 1 "${ROUNDS:-2}"); do
  for v in LLMHOST_CUDA_MLX_INT8=on LLMHOST_CUDA_INT8_EARLY=off LLMHOST_CUDA_MLX_INT8=off; do
    mb "$v r$round" "$v" -- --prompt 512 --steps 32 --batch 8 --phases decode1,decode-batch
    mb "$v r$round" "$v" -- --prompt 16 --steps 16 --batch 32 --phases decode-batch
  done
done
for fmt in bf16 mlx4; do  # decode b1 after 8,192 tokens
  "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --group-size 64 --device cuda --precisions auto \
    --reps 2 --steps 16 --prompt 16 --batch 1 --long-context 8192 --formats $fmt --phases long >"$out/long.log" 2>&1
  echo "| $fmt | $(grep -E 'after a [0-9]+-token prompt [0-9.]+ tok' "$out/long.log" | head -1 | cut -c1-130) |" | tee -a "$out/table.md"
done
for fmt in mlx4 fp8; do
  for v in LLMHOST_CUDA_WIDEN_PROMPT=off LLMHOST_CUDA_WIDEN_PROMPT=on; do
    env "$v" "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --group-size 64 --device cuda --precisions auto \
      --prefill-reps 2 --prompt 512 --formats $fmt --phases prefill >"$out/prefill.log" 2>&1
    echo "| $v $fmt prefill 512 | $(grep -E 'prefill' "$out/prefill.log" | grep -E 'tok/s' | grep -vE '^\|' | head -1 | cut -c1-120) |" | tee -a "$out/table.md"
  done
done
if [ "${FIGURES:-1}" = 1 ]; then
  "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --group-size 64 --device cuda --precisions auto \
    --reps 3 --prefill-reps 2 --steps 32 --prompt 16 --batch 32 --long-context 8192 --formats mlx4 >"$out/fig_mlx4.log" 2>&1
  grep -E 'copy bandwidth at start|tok/s' "$out/fig_mlx4.log" | grep -vE '^\|' | cut -c1-260
fi
if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  env LLMHOST_CUDA_GRAPHS=off ncu --clock-control none --kernel-name regex:'Int8Mlx|QuantizeX' --launch-skip 20 --launch-count 10 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats \
    "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --group-size 64 --device cuda --precisions auto \
    --reps 1 --formats mlx4 --prompt 16 --steps 2 --batch 1 --phases decode1 >"$out/ncu.log" 2>&1
  grep -E 'Int8Mlx|QuantizeX|Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued' \
    "$out/ncu.log" | sed -E 's/ +/ /g' | cut -c1-160 | head -70
fi
echo
cat "$out/table.md"
