#!/usr/bin/env bash
# On the lent GPU machine, from the repository root with .devcarry carried
# (bench/gpu/pack.sh): the CUDA tests, then decode of the Llama-3-8B shape
# (random weights, model_bench) with each variant named in VARIANTS against
# the default, alternated, and an ncu profile of one decode step's GEMVs.
#   VARIANTS="LLMHOST_CUDA_FUSED_STEPS=off LLMHOST_CUDA_PDL=off" NCU_ENV="" NCU_B32=1 bench/gpu/decode_ab.sh
# Logs land in $OUT (or /tmp/decode-ab); the last lines are a table.
set -uo pipefail
out=${OUT:-/tmp/decode-ab}
mkdir -p "$out"
. bench/gpu/stage.sh

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  gtest_run backend_tests "$out/backend_tests.log" "${BACKEND_TESTS:-*cuda*:Cuda*:*Cuda*:KeyLanes*:PromptAttention*}"
  [ -x "$B/engine_tests" ] && gtest_run engine_tests "$out/engine_tests.log" 'Cuda*'
  [ -x "$B/model_tests" ] && gtest_run model_tests "$out/model_tests.log" "${MODEL_TESTS:-*Cuda*:*RandomModel*}"
fi

mb() {  # mb LABEL ENV... -- model_bench args: one line of figures
  local label=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --device cuda --precisions auto \
    --reps 3 "$@" >"$out/mb.log" 2>&1
  local line
  line=$(grep -E 'decode b1 .*tok/s' "$out/mb.log" | head -1 | sed -E 's/.*decode b1 ([0-9.]+), (b[0-9]+) ([0-9.]+) tok\/s.*/b1 \1  \2 \3/')
  echo "| $label | $* | $line |" | tee -a "$out/table.md"
  cat "$out/mb.log" >>"$out/model_bench.log"
}
if [ "${FIGURES:-0}" = 1 ]; then
  # The issue's figures at the defaults: 16-token prompts (b1, 32 sequences, prefill 512), then after 8,192 tokens.
  for fmt in ${FIG_FORMATS:-bf16 mlx4}; do
    "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --group-size 64 --device cuda --precisions auto \
      --reps 3 --prefill-reps 2 --steps 32 --prompt 16 --batch 32 --long-context 8192 --formats $fmt >"$out/fig_$fmt.log" 2>&1
    grep -E 'copy bandwidth at start|tok/s' "$out/fig_$fmt.log" | grep -vE '^\|' | cut -c1-260
  done
fi
read -r -a variants <<<"${VARIANTS:-}"
runs=(NONE "${variants[@]}")
rounds="1 2"
if [ "${QUICK:-0}" = 1 ]; then  # QUICK=1: no A/B rows, no skeleton
  runs=()
  rounds=""
fi
for round in $rounds; do
  for v in NONE "${variants[@]}"; do
    e=()
    [ "$v" != NONE ] && e=("$v")
    mb "${v/NONE/default} r$round" "${e[@]}" -- --formats bf16 --prompt 512 --steps 32 --batch 8 --phases decode1,decode-batch
  done
done
for v in "${runs[@]}"; do
  e=()
  [ "$v" != NONE ] && e=("$v")
  mb "${v/NONE/default} mlx4" "${e[@]}" -- --formats mlx4 --group-size 64 --prompt 512 --steps 32 --batch 32 --phases decode1,decode-batch
done
# A 32-layer skeleton (hidden 512): a step's launches and small kernels with
# next to no weights to read.
small=/tmp/skeleton.json
cat >"$small" <<'JSON'
{"hidden_size": 512, "num_hidden_layers": 32, "num_attention_heads": 8, "num_key_value_heads": 2,
 "intermediate_size": 1024, "vocab_size": 32000, "tie_word_embeddings": false, "max_position_embeddings": 16384}
JSON
for v in "${runs[@]}"; do
  e=()
  [ "$v" != NONE ] && e=("$v")
  cfg_saved=$cfg
  cfg=$small
  mb "${v/NONE/default} skeleton" "${e[@]}" -- --formats bf16 --prompt 512 --steps 64 --batch 8 --phases decode1,decode-batch
  cfg=$cfg_saved
done
if [ -n "${NCU_ENV:-}" ] && command -v ncu >/dev/null; then
  env LLMHOST_CUDA_GRAPHS=off $NCU_ENV ncu --clock-control none --kernel-name regex:'Mma' --launch-skip 200 --launch-count 12 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --device cuda --precisions auto --reps 1 \
    --formats bf16 --prompt 16 --steps 4 --batch 1 --phases decode1 >"$out/ncu.log" 2>&1
  grep -E 'Mma|gpu__time|dram__' "$out/ncu.log" | sed -E 's/ +/ /g' | head -48
fi
if [ "${NCU_B32:-0}" = 1 ] && command -v ncu >/dev/null; then
  # Why 32 sequences' GEMVs take ~4x their weight reads: throughput and warp stalls of one layer's four.
  env LLMHOST_CUDA_GRAPHS=off ncu --clock-control none --kernel-name regex:'MmaRows' --launch-skip 8 --launch-count 4 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
    "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --device cuda --precisions auto --reps 1 \
    --formats bf16 --prompt 16 --steps 2 --batch 32 --phases decode-batch >"$out/ncu_b32.log" 2>&1
  grep -E 'MmaRows|Duration|DRAM Throughput|Compute \(SM\) Throughput|L2 Cache Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued' \
    "$out/ncu_b32.log" | sed -E 's/ +/ /g' | head -60
fi
if [ "${NCU_DETAIL:-0}" = 1 ] && command -v ncu >/dev/null; then
  # Where decode's non-weight time goes: attention over 8,192 keys (chunks and merge), and the MLX 4-bit GEMV at one token.
  sec="--section SpeedOfLight --section Occupancy --section WarpStateStats"
  env LLMHOST_CUDA_GRAPHS=off ncu --clock-control none --kernel-name regex:'KeyLanes|Merge' --launch-skip 64 --launch-count 4 $sec \
    "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --device cuda --precisions auto --reps 1 \
    --formats bf16 --prompt 16 --steps 2 --batch 1 --long-context 8192 --phases long >"$out/ncu_attn.log" 2>&1
  [ "${QUICK:-0}" = 1 ] || env LLMHOST_CUDA_GRAPHS=off ncu --clock-control none --kernel-name regex:'MmaMlx' --launch-skip 8 --launch-count 4 $sec \
    "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --group-size 64 --device cuda --precisions auto --reps 1 \
    --formats mlx4 --prompt 16 --steps 2 --batch 1 --phases decode1 >"$out/ncu_mlx.log" 2>&1
  for f in ncu_attn ncu_mlx; do
    grep -E 'KeyLanes|Merge|MmaMlx|Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|stalled' \
      "$out/$f.log" | sed -E 's/ +/ /g' | cut -c1-200 | head -60
  done
fi
echo
cat "$out/table.md" 2>/dev/null
