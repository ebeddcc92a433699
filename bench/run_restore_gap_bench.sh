#!/usr/bin/env bash
# Inter-token gaps of a running stream while another request restores an
# 8,192-token prefix from the SSD tier (issue 12), on the synthetic Llama-1B
# shape of run_kv_tier_bench.sh (bf16, max_position_embeddings 16384, the
# same model cache). bench/restore_gap_bench.py does the measuring; extra
# arguments go to it (e.g. --tokens 4096, --decode-tokens 400).
#
#   BUILD=build bench/run_restore_gap_bench.sh
#   LLMHOST_BENCH_MODELS=/path/to/cache  (default: $TMPDIR or /tmp, llmhost-bench-models)
#   DTYPE=mlx4 (default bf16)  WORK=/path (scratch folder on the disk to measure; default a temp dir)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
cache="${LLMHOST_BENCH_MODELS:-${TMPDIR:-/tmp}/llmhost-bench-models}"
llmhost="$build/llmhost"
dtype="${DTYPE:-bf16}"
if [ ! -x "$llmhost" ]; then
  echo "run_restore_gap_bench: $llmhost not built (ninja -C $build llmhost)" >&2
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
python3 "$root/bench/restore_gap_bench.py" "$llmhost" "$models" --model "$name" --work "$work" "$@"
echo "/proc/loadavg after: $(cat /proc/loadavg); bench wall $(( $(date +%s) - start )) s"
