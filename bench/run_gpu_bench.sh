#!/usr/bin/env bash
# The GPU benchmark of issue 14 in one command: synthesizes the Llama-3-8B
# shape (hidden 4096, 32 layers, 32 heads, 8 KV heads, FFN 14336, vocab
# 32000, untied head) in bf16 and MLX 4-bit group 64, one format at a time
# (the GPU machine's disk is 64 GB), runs model_bench on it with the GPU
# (decode at batch 1 and at --batch sequences, decode after an 8K-token
# context, 512-token prefill, the GPU's copy bandwidth measured in the same
# run; for bf16 also streaming decode through `serve` at 1-128 sequences and the
# TTFT of an 8K prompt cold / hot tier / SSD tier) and deletes it. Extra
# arguments go to model_bench.
#
#   BUILD=build bench/run_gpu_bench.sh [--device cuda:1] [--batch 32]
#   LLMHOST=/path/llmhost MODEL_BENCH=/path/model_bench  (binaries carried elsewhere)
#   LLMHOST_BENCH_MODELS=/path/to/scratch  (default: $TMPDIR or /tmp, llmhost-gpu-bench)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
llmhost="${LLMHOST:-$build/llmhost}"
bench="${MODEL_BENCH:-$build/bench/model_bench}"
scratch="${LLMHOST_BENCH_MODELS:-${TMPDIR:-/tmp}/llmhost-gpu-bench}"
for bin in "$llmhost" "$bench"; do
  [ -x "$bin" ] || { echo "run_gpu_bench: $bin not built (ninja -C $build llmhost model_bench)" >&2; exit 1; }
done
config='{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
 "intermediate_size": 14336, "vocab_size": 32000, "tie_word_embeddings": false, "max_position_embeddings": 16384}'
mkdir -p "$scratch"
trap 'rm -rf "$scratch"/llama8b-*' EXIT
for dtype in bf16 mlx4; do
  dir="$scratch/llama8b-$dtype"
  "$llmhost" synth-model --arch llama --config "$config" --dtype "$dtype" --group-size 64 --seed 1 --out "$dir" | tail -1
  "$bench" --models "$scratch" --prefix llama8b --formats "$dtype" --device cuda --precisions auto --reps 2 \
    --prefill-reps 2 --steps 8 --batch 32 --long-context 8192 "$@" | grep -E "bandwidth|tok/s|^\|"
  if [ "$dtype" = bf16 ]; then
    # Through the server: streaming decode at 1 / 8 / 32 / 128 sequences (512-token prompts, 128 new
    # tokens each), then the TTFT of an 8K-token prompt cold, from the hot tier and from the SSD tier.
    python3 "$root/bench/serve_decode_bench.py" "$llmhost" "$scratch" --device cuda --concurrency 1,8,32,128 \
      --prompt-tokens 512 --max-tokens 128 --extra "--max-queue 512"
    python3 "$root/bench/kv_tier_bench.py" "$llmhost" "$scratch" --model llama8b-bf16 --tokens 8192 \
      --extra "--device cuda" 2>/dev/null | tail -12
  fi
  rm -rf "$dir"
done
