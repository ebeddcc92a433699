#!/usr/bin/env bash
# On the lent GPU machine, from the repository root with .devcarry carried
# (bench/gpu/pack.sh with model_bench): one layer's GEMMs of a batched decode
# step under ncu for each of VARIANTS (ENV=VAL, several joined by commas;
# DEFAULT=1 the defaults), a line a kernel: its template and grid, registers,
# duration and DRAM / L2 / SM throughput. The way to choose a tile per weight
# shape: every weight's kernel under each setting, in one call.
#   VARIANTS="DEFAULT=1 LLMHOST_CUDA_WGMMA_TILE=64x32" BATCH=128 bench/gpu/gemm_ncu.sh
# KERNELS (WgmmaGemm), SKIP (64 launches of them: the third layer's), COUNT
# (4: q/k/v, o, gate/up, down), PROMPT (16). Each run is killed after
# RUN_TIMEOUT seconds (100). Logs land in $OUT (or /tmp/gemm-ncu).
set -uo pipefail
out=${OUT:-/tmp/gemm-ncu}
mkdir -p "$out"
. bench/gpu/stage.sh >/dev/null
if ! command -v ncu >/dev/null; then
  echo "gemm_ncu: no ncu on this machine"
  exit 1
fi
for v in ${VARIANTS:-DEFAULT=1}; do
  # shellcheck disable=SC2086  # a variant's settings, split at the commas
  env ${v//,/ } LLMHOST_CUDA_GRAPHS=off timeout "${RUN_TIMEOUT:-100}" ncu --clock-control none \
    --kernel-name regex:"${KERNELS:-WgmmaGemm}" --launch-skip "${SKIP:-64}" --launch-count "${COUNT:-4}" \
    --section SpeedOfLight --section LaunchStats "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 \
    --device cuda --precisions "${PRECISION:-auto}" --formats bf16 --reps 1 --steps 4 --batch "${BATCH:-128}" \
    --prompt "${PROMPT:-16}" --phases decode-batch >"$out/ncu.log" 2>&1
  echo "== ${v/DEFAULT=1/default} (rc $?)"
  awk '
    /^  [a-z].*Kernel.*\(.*\)x\(/ { if (k != "") print k " | " r " regs | " d " us | " dr "% / " l2 "% / " sm "%"
                                  k = $0; sub(/\([^()]*\) \(/, " (", k); sub(/, Context.*/, "", k); sub(/^ +void /, "", k) }
    /Registers Per Thread/ { r = $NF }
    / Duration / { d = $NF }
    /DRAM Throughput/ { dr = $NF }
    /L2 Cache Throughput/ { l2 = $NF }
    /Compute \(SM\) Throughput/ { sm = $NF }
    END { if (k != "") print k " | " r " regs | " d " us | " dr "% / " l2 "% / " sm "%" }' "$out/ncu.log" |
    sed -E 's/\(anonymous namespace\)::|<unnamed>::|unnamed>::|llmhost::cuda::|mma_rows:://g' | cut -c1-170
done
