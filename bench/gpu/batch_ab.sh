#!/usr/bin/env bash
# On the lent GPU machine, from the repository root with .devcarry carried
# (bench/gpu/pack.sh): the CUDA tests, then batched bf16 decode of the
# Llama-3-8B shape (random weights, model_bench) at each of BATCHES, the
# default against each variant in VARIANTS, alternated over ROUNDS; then an
# ncu profile of one batched step's GEMVs (NCU_KERNELS, at NCU_BATCH) for the
# default and each variant.
#   VARIANTS="LLMHOST_CUDA_MMA_WIDE=off" BATCHES="16:16 32:16 128:128" bench/gpu/batch_ab.sh
# A batch is SEQUENCES:PROMPT_TOKENS; PHASES=decode1,decode-batch adds batch 1.
# A variant of several settings joins them with commas (A=1,B=2).
# NCU_PROMPT: the profiled batch's prompt tokens (16); NCU_LINES: lines of ncu's summary shown (40).
# BACKEND_ENV runs the backend tests a second time under that setting; NCU_MORE:
# more ncu arguments (--section InstructionStats);
# PRECISIONS (default auto) is model_bench's list, a figure each;
# PHASES=prefill with MORE="--prefill-tokens 512 --prefill-reps 3" times prefill.
# Each model_bench run is killed after RUN_TIMEOUT seconds (180; its row
# then has no figure) and the next one runs.
# Logs land in $OUT (or /tmp/batch-ab).
set -uo pipefail
out=${OUT:-/tmp/batch-ab}
mkdir -p "$out"
. bench/gpu/stage.sh

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  gtest_run backend_tests "$out/backend_tests.log" "${BACKEND_TESTS:-*cuda*:Cuda*:*Cuda*:KeyLanes*:PromptAttention*}"
  if [ -n "${BACKEND_ENV:-}" ]; then
    gtest_run backend_tests "$out/backend_tests_env.log" "${BACKEND_TESTS:-*cuda*:Cuda*:*Cuda*}" $BACKEND_ENV
  fi
  gtest_run engine_tests "$out/engine_tests.log" 'Cuda*'
  gtest_run model_tests "$out/model_tests.log" "${MODEL_TESTS:-*Cuda*:*RandomModel*}"
fi

bench() {  # bench ENV SEQUENCES PROMPT [more model_bench args]
  local v=$1 b=$2 p=$3
  shift 3
  timeout "${RUN_TIMEOUT:-180}" env ${v//,/ } "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --device cuda --precisions "${PRECISIONS:-auto}" \
    --formats ${FORMAT:-bf16} --reps ${REPS:-3} --steps 32 --batch "$b" --prompt "$p" "$@" >"$out/mb.log" 2>&1
  cat "$out/mb.log" >>"$out/model_bench.log"
}
echo "| round | batch:prompt | variant | generated tok/s |" | tee "$out/table.md"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for bp in ${BATCHES:-16:16 32:16 128:128}; do
    for v in DEFAULT=1 ${VARIANTS:-}; do
      # shellcheck disable=SC2086  # MORE: model_bench arguments
      bench "$v" "${bp%%:*}" "${bp##*:}" --phases "${PHASES:-decode-batch}" ${MORE:-}
      fig=$(grep -oE '(prefill [0-9.]+, )?decode b1 [0-9.]+, b[0-9]+ [0-9.]+ tok/s' "$out/mb.log" | paste -sd';' -)
      echo "| $round | $bp | ${v/DEFAULT=1/default} | $fig |" | tee -a "$out/table.md"
    done
  done
done
if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  for v in ${NCU_VARIANTS:-DEFAULT=1 ${VARIANTS:-}}; do
    env ${v//,/ } LLMHOST_CUDA_GRAPHS=off ncu --clock-control none --kernel-name regex:"${NCU_KERNELS:-MmaRows|MmaWide|MmaGemm}" \
      --launch-skip 64 --launch-count 4 --section SpeedOfLight --section Occupancy --section WarpStateStats ${NCU_MORE:-} \
      "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --device cuda --precisions auto --formats bf16 \
      --reps 1 --steps 4 --batch "${NCU_BATCH:-32}" --prompt "${NCU_PROMPT:-16}" --phases decode-batch >"$out/ncu.log" 2>&1
    echo "== ncu ${v/DEFAULT=1/default}"
    grep -E '(Mma(Rows|Wide|Gemm)|WgmmaGemm|SplitSlots|PickRows)Kernel|Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued' \
      "$out/ncu.log" | sed -E 's/ +/ /g; s/\(llmhost::cuda[^)]*\)//' | cut -c1-140 | head -${NCU_LINES:-40}
  done
fi
