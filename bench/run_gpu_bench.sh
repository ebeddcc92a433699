#!/usr/bin/env bash
# The GPU benchmark of issue 14 in one command: the Llama-3-8B shape (hidden
# 4096, 32 layers, 32 heads, 8 KV heads, FFN 14336, vocab 32000, untied head)
# in bf16 and MLX 4-bit group 64, with random weights generated in memory at
# load (`random:llama:DTYPE:llama8b.json:1`, model/random_model.h: the
# weights synth-model would write with --seed 1, no files on the 64 GB disk).
# model_bench runs it on the GPU (decode at batch 1 and at --batch sequences,
# decode after an 8K-token context, 512-token prefill, the GPU's copy
# bandwidth measured in the same run); for bf16 also streaming decode through
# `serve` at 1-128 sequences and the TTFT of an 8K prompt cold / hot tier /
# SSD tier. Extra arguments go to model_bench.
#
#   BUILD=build bench/run_gpu_bench.sh [--device cuda:1] [--batch 32]
#   LLMHOST=/path/llmhost MODEL_BENCH=/path/model_bench  (binaries carried elsewhere)
#   LLMHOST_BENCH_MODELS=/path/to/scratch  (default: $TMPDIR or /tmp, llmhost-gpu-bench: the config file)
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
mkdir -p "$scratch"
config="$scratch/llama8b.json"  # its stem is the served model's id
cat > "$config" <<'JSON'
{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
 "intermediate_size": 14336, "vocab_size": 32000, "tie_word_embeddings": false, "max_position_embeddings": 16384}
JSON
for dtype in bf16 mlx4; do
  "$bench" --random-config "$config" --arch llama --seed 1 --group-size 64 --formats "$dtype" --device cuda \
    --precisions auto --reps 2 --prefill-reps 2 --steps 8 --batch 32 --long-context 8192 "$@" |
    grep -E "bandwidth|tok/s|^\|"
  if [ "$dtype" = bf16 ]; then
    # Through the server: streaming decode at 1 / 8 / 32 / 128 sequences (512-token prompts, 128 new
    # tokens each), then the TTFT of an 8K-token prompt cold, from the hot tier and from the SSD tier.
    model="random:llama:bf16:$config:1"
    python3 "$root/bench/serve_decode_bench.py" "$llmhost" "$model" --device cuda --concurrency 1,8,32,128 \
      --prompt-tokens 512 --max-tokens 128 --extra "--max-queue 512"
    python3 "$root/bench/kv_tier_bench.py" "$llmhost" "$model" --model llama8b --tokens 8192 \
      --extra "--device cuda" 2>/dev/null | tail -12
  fi
done
