# Sourced by the bench/gpu scripts on the lent GPU machine, from the
# repository root with .devcarry carried (bench/gpu/pack.sh): unpacks the
# pack once into /tmp/llmhost-stage (B: its binaries), names the GPU (also in
# $out/gpu.txt where the script set out), writes the Llama-3-8B shape's
# config to $cfg (VOCAB=128256: Llama-3's vocabulary; 32000 by default),
# and gives gtest_run.
# shellcheck shell=bash
s=/tmp/llmhost-stage
B=$s/bin
mkdir -p "$s"
# A stamp, not the binaries' times (tar keeps their build times): a second
# script in the same call does not unpack the same pack again.
if [ ! -e "$s/.unpacked" ] || [ .devcarry/stage.tar.xz -nt "$s/.unpacked" ]; then
  tar -C "$s" -xJf .devcarry/stage.tar.xz || exit 1
  touch "$s/.unpacked"
fi
export LD_LIBRARY_PATH=$s/lib
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | tee "${out:-/tmp}/gpu.txt"
cfg=/tmp/llama8b.json
cat >"$cfg" <<JSON
{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
 "intermediate_size": 14336, "vocab_size": ${VOCAB:-32000}, "tie_word_embeddings": false, "max_position_embeddings": 16384}
JSON

# gtest_run BINARY LOG FILTER [ENV=VAL...]: one line with its exit status and
# gtest's verdict, then the names of the failed tests. A run past
# TEST_TIMEOUT seconds (300) is killed and named with the test it was in: a
# kernel waiting on a wrong mbarrier count hangs rather than fails, and a
# hung call spends the session's device minutes.
gtest_run() {
  local bin=$1 log=$2 filter=$3
  shift 3
  timeout "${TEST_TIMEOUT:-300}" env "$@" "$B/$bin" --gtest_filter="$filter" >"$log" 2>&1
  local rc=$?
  [ $rc = 124 ] && echo "$bin: killed after ${TEST_TIMEOUT:-300} s in $(grep -E '^\[ RUN' "$log" | tail -1)"
  echo "$bin${*:+ ($*)} rc=$rc: $(grep -E '^\[  PASSED|^\[  FAILED' "$log" | tr '\n' ' ')"
  grep -E '^\[  FAILED ' "$log" | head -20
}
