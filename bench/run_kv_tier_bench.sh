#!/usr/bin/env bash
# KV cache tiers benchmark of issue 6: TTFT of an 8,192-token prompt on the
# synthetic Llama-1B shape (hidden 2048, 16 layers, 32 heads, 8 KV heads, FFN
# 8192, vocab 32000, tied; the shape of run_model_bench.sh, in bf16, its
# fastest prefill format; max_position_embeddings 16384 so that 8K fits, hence
# its own folder "llama1b-bf16-ctx16k" in the same model cache) served by
# `llmhost serve`: cold prefill, hot-tier hit, SSD hit after a restart with the
# block files dropped from the page cache, and the disk's read bandwidth
# (bench/kv_tier_bench.py does the measuring). Extra arguments go to
# kv_tier_bench.py (e.g. --tokens 4096, --extra "--precision fast-int8").
#
#   BUILD=build-kvit bench/run_kv_tier_bench.sh
#   LLMHOST_BENCH_MODELS=/path/to/cache  (default: $TMPDIR or /tmp, llmhost-bench-models)
#   DTYPE=mlx4 (default bf16)  WORK=/path (scratch folder on the disk to measure; default a temp dir)
#   BENCH=restore_gap_bench.py (another measuring script on the same model and server; run_restore_gap_bench.sh)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
cache="${LLMHOST_BENCH_MODELS:-${TMPDIR:-/tmp}/llmhost-bench-models}"
llmhost="$build/llmhost"
dtype="${DTYPE:-bf16}"
if [ ! -x "$llmhost" ]; then
  echo "$(basename "$0"): $llmhost not built (ninja -C $build llmhost)" >&2
  exit 1
fi

config='{"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
 "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 32000,
 "tie_word_embeddings": true, "max_position_embeddings": 16384}'
name="llama1b-$dtype-ctx16k"
# A folder holding only this model, so that the server discovers nothing else.
models="$cache/kv-tier-bench"
dir="$models/$name"
mkdir -p "$models"
args=(synth-model --arch llama --config "$config" --dtype "$dtype" --group-size 64 --seed 1 --out "$dir")
stamp="$(printf '%s\n' "${args[@]}")"
if [ ! -f "$dir/model.safetensors" ] || [ "$(cat "$dir/.synth-args" 2>/dev/null)" != "$stamp" ]; then
  rm -f "$dir/.synth-args"
  "$llmhost" "${args[@]}"
  printf '%s' "$stamp" > "$dir/.synth-args"
fi

work="${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/llmhost-kvbench-XXXXXX")}"
mkdir -p "$work"
cleanup() { [ -n "${WORK:-}" ] || rm -rf "$work"; }
trap cleanup EXIT

echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown); date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; /proc/loadavg: $(cat /proc/loadavg)"
echo "cache dir filesystem: $(df -hT "$work" | tail -1)"
start=$(date +%s)
python3 "$root/bench/${BENCH:-kv_tier_bench.py}" "$llmhost" "$models" --model "$name" --work "$work" "$@"
echo "/proc/loadavg after: $(cat /proc/loadavg); bench wall $(( $(date +%s) - start )) s"
