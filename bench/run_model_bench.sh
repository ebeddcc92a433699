#!/usr/bin/env bash
# Synthesizes the Llama-1B-shaped models of issue 3 (bf16, mlx8, mlx4 group 64;
# hidden 2048, 16 layers, 32 heads, 8 KV heads, FFN 8192, vocab 32000, tied
# embeddings) into a cache directory if they are absent, then runs model_bench
# on them. Extra arguments go to model_bench (e.g. --formats mlx4 --reps 5).
#
#   BUILD=build-bench bench/run_model_bench.sh
#   LLMHOST_BENCH_MODELS=/path/to/cache  (default: $TMPDIR or /tmp, llmhost-bench-models)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
cache="${LLMHOST_BENCH_MODELS:-${TMPDIR:-/tmp}/llmhost-bench-models}"
llmhost="$build/llmhost"
bench="$build/bench/model_bench"
for bin in "$llmhost" "$bench"; do
  if [ ! -x "$bin" ]; then
    echo "run_model_bench: $bin not built (ninja -C $build llmhost model_bench)" >&2
    exit 1
  fi
done

config='{"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
 "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 32000,
 "tie_word_embeddings": true, "max_position_embeddings": 4096}'
mkdir -p "$cache"
for dtype in bf16 mlx8 mlx4; do
  dir="$cache/llama1b-$dtype"
  args=(synth-model --arch llama --config "$config" --dtype "$dtype" --group-size 64 --seed 1 --out "$dir")
  # A stamp of the arguments: a model made with other arguments is rebuilt.
  stamp="$(printf '%s\n' "${args[@]}")"
  if [ -f "$dir/model.safetensors" ] && [ "$(cat "$dir/.synth-args" 2>/dev/null)" = "$stamp" ]; then
    continue
  fi
  rm -f "$dir/.synth-args"
  "$llmhost" "${args[@]}"
  printf '%s' "$stamp" > "$dir/.synth-args"
done

echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown); date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "/proc/loadavg: $(cat /proc/loadavg)"
exec "$bench" --models "$cache" "$@"
