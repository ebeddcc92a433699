#!/usr/bin/env bash
# Serving benchmark of issue 4: synthesizes the Llama-1B shape in MLX 4-bit
# (hidden 2048, 16 layers, 32 heads, 8 KV heads, FFN 8192, vocab 32000, tied;
# the same arguments and cache as run_model_bench.sh, so either script reuses
# the other's model), starts `llmhost serve` on 127.0.0.1 (free port, temp
# --home, that model dir plus tests/data/models for the tiny fixture) and runs
# bench/serve_bench.mjs against it (Node's built-in http only). Extra
# arguments go to serve_bench.mjs (e.g. --max-tokens 64 --concurrency 1,8).
#
#   BUILD=build-servebench bench/run_serve_bench.sh
#   LLMHOST_BENCH_MODELS=/path/to/cache  (default: $TMPDIR or /tmp, llmhost-bench-models)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
cache="${LLMHOST_BENCH_MODELS:-${TMPDIR:-/tmp}/llmhost-bench-models}"
llmhost="$build/llmhost"
if [ ! -x "$llmhost" ]; then
  echo "run_serve_bench: $llmhost not built (ninja -C $build llmhost)" >&2
  exit 1
fi
command -v node > /dev/null || { echo "run_serve_bench: node not found" >&2; exit 1; }

config='{"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
 "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 32000,
 "tie_word_embeddings": true, "max_position_embeddings": 4096}'
mkdir -p "$cache"
dir="$cache/llama1b-mlx4"
args=(synth-model --arch llama --config "$config" --dtype mlx4 --group-size 64 --seed 1 --out "$dir")
stamp="$(printf '%s\n' "${args[@]}")"
if [ ! -f "$dir/model.safetensors" ] || [ "$(cat "$dir/.synth-args" 2>/dev/null)" != "$stamp" ]; then
  rm -f "$dir/.synth-args"
  "$llmhost" "${args[@]}"
  printf '%s' "$stamp" > "$dir/.synth-args"
fi

home="$(mktemp -d "${TMPDIR:-/tmp}/llmhost-servebench-XXXXXX")"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2> /dev/null; then
    kill -TERM "$server_pid" 2> /dev/null || true
    wait "$server_pid" 2> /dev/null || true
  fi
  rm -rf "$home"
}
trap cleanup EXIT

# Keep-alive chunks off: the first SSE chunk is then the first token.
LLMHOST_LOG_LEVEL=warn "$llmhost" serve --home "$home" --host 127.0.0.1 --port 0 \
  --model-dir "$cache" --model-dir "$root/tests/data/models" --sse-keepalive off \
  > "$home/stdout" 2> "$home/stderr" &
server_pid=$!
port=""
for _ in $(seq 1 300); do
  port="$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\).*|\1|p' "$home/stdout" | head -1)"
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2> /dev/null || { echo "run_serve_bench: server exited:" >&2; cat "$home/stderr" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "run_serve_bench: server did not start" >&2; cat "$home/stderr" >&2; exit 1; }

echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown); date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "/proc/loadavg before: $(cat /proc/loadavg)"
start=$(date +%s)
node "$root/bench/serve_bench.mjs" --url "http://127.0.0.1:$port" --model llama1b-mlx4 \
  --tiny-model qwen3-tiny --pid "$server_pid" "$@"
echo "/proc/loadavg after: $(cat /proc/loadavg); bench wall $(( $(date +%s) - start )) s"
