#!/usr/bin/env bash
# Tensor parallelism (issue 19) in one command, on a host with several GPUs:
# the Llama-3-8B shape in bf16 on 1 GPU and split over 2 (decode at batch 1,
# at 128 sequences, 512-token prefill), the speed-ups the issue asks for
# (b1 >= 1.6x, 128 sequences >= 1.8x), then the Llama-3-70B shape (hidden
# 8192, 80 layers, 64 heads, 8 KV heads, FFN 28672, vocab 128256; random
# weights generated at load: 141 GB would not fit the disk) split over as many
# GPUs as it needs, its decode against the bandwidth bound (weight bytes per
# GPU / the copy bandwidth model_bench measures). Extra arguments go to every
# model_bench run.
#
#   BUILD=build bench/run_tp_bench.sh
#   MODEL_BENCH=/path/model_bench TP70=4 (GPUs for the 70B shape; default: 2 where each has >= 100 GiB, else 4)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bench="${MODEL_BENCH:-$build/bench/model_bench}"
[ -x "$bench" ] || { echo "run_tp_bench: $bench not built (ninja -C $build model_bench)" >&2; exit 1; }
command -v nvidia-smi > /dev/null || { echo "run_tp_bench: no nvidia-smi: needs 2 or more GPUs" >&2; exit 77; }
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
[ "$gpus" -ge 2 ] || { echo "run_tp_bench: needs 2 or more GPUs (found $gpus)" >&2; exit 77; }
scratch="${TMPDIR:-/tmp}/llmhost-tp-bench"
mkdir -p "$scratch"
cat > "$scratch/llama8b.json" <<'JSON'
{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
 "intermediate_size": 14336, "vocab_size": 32000, "tie_word_embeddings": false, "max_position_embeddings": 16384}
JSON
cat > "$scratch/llama70b.json" <<'JSON'
{"hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
 "intermediate_size": 28672, "vocab_size": 128256, "tie_word_embeddings": false, "max_position_embeddings": 16384}
JSON

run() {  # run TP CONFIG ARGS...: the decode and prefill lines of one model_bench run
  local tp=$1 config=$2
  shift 2
  "$bench" --random-config "$config" --arch llama --seed 1 --formats bf16 --device cuda --tensor-parallel "$tp" \
    --precisions auto "$@" | grep -E "bandwidth|auto \(serve" | tee -a "$scratch/last.log"
}
rate() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" | head -1; }

: > "$scratch/last.log"
declare -A b1 b128 pre
for tp in 1 2; do
  out=$(run "$tp" "$scratch/llama8b.json" --reps 3 --prefill-reps 2 --steps 16 --prompt 512 --batch 128 \
        --phases decode1,decode-batch,prefill "$@")
  echo "8B shape, --tensor-parallel $tp: $out"
  b1[$tp]=$(echo "$out" | rate "decode b1")
  b128[$tp]=$(echo "$out" | rate "b128")
  pre[$tp]=$(echo "$out" | rate "prefill")
done
python3 - "${b1[1]}" "${b1[2]}" "${b128[1]}" "${b128[2]}" "${pre[1]}" "${pre[2]}" <<'PY'
import sys
b1, b1s, b128, b128s, p, ps = map(float, sys.argv[1:])
print(f"8B bf16 decode b1: 1 GPU {b1:.1f}, 2 GPUs {b1s:.1f} tok/s: {b1s / b1:.2f}x (goal >= 1.6x)")
print(f"8B bf16 decode 128 sequences: 1 GPU {b128:.0f}, 2 GPUs {b128s:.0f} tok/s: {b128s / b128:.2f}x (goal >= 1.8x)")
print(f"8B bf16 prefill 512: 1 GPU {p:.0f}, 2 GPUs {ps:.0f} tok/s: {ps / p:.2f}x")
PY

mem=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
tp70=${TP70:-$([ "$mem" -ge 102400 ] && echo 2 || echo 4)}
[ "$tp70" -le "$gpus" ] || { echo "run_tp_bench: the 70B shape needs $tp70 GPUs here (found $gpus)" >&2; exit 1; }
out=$(run "$tp70" "$scratch/llama70b.json" --reps 2 --prefill-reps 1 --steps 8 --prompt 512 --batch 32 \
      --phases decode1,decode-batch,prefill "$@")
echo "70B shape, --tensor-parallel $tp70: $out"
