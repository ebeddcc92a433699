#!/usr/bin/env bash
# On the lent GPU machine, from the repository root with .devcarry carried
# (bench/gpu/pack.sh with build/llmhost in it): streaming decode through
# `llmhost serve --device cuda` (bench/serve_decode_bench.py) over the
# Llama-3-8B shape's random weights (a random-weights spec: nothing written to
# disk), greedy and then T=1 top_p=0.95 (a step's draws on the sample pool),
# the default against each variant in VARIANTS.
#   VARIANTS="LLMHOST_CUDA_BATCH_INVARIANT=off" LEVELS=1,8,32,128 bench/gpu/serve_ab.sh
# A variant is an environment setting (ENV=VAL) or serve flags (--flag=value,
# several joined by commas); SAMPLING=greedy or SAMPLING=top_p runs one of the two.
# PROMPT (512) and MAX_TOKENS (128) set each stream's lengths. Logs land in
# $OUT (or /tmp/serve-ab); the tables are printed. Then the server's own time
# per request (bench/serve_overhead_bench.py, OVERHEAD=0 skips it).
set -uo pipefail
out=${OUT:-/tmp/serve-ab}
mkdir -p "$out"
. bench/gpu/stage.sh
spec="random:llama:bf16:$cfg:1"
case "${SAMPLING:-both}" in
  both) samplings=("--temperature 0" "--temperature 1 --top-p 0.95") ;;
  greedy) samplings=("--temperature 0") ;;
  top_p) samplings=("--temperature 1 --top-p 0.95") ;;
  *) echo "serve_ab: SAMPLING is greedy, top_p or both, not '$SAMPLING'" >&2; exit 2 ;;
esac
for sampling in "${samplings[@]}"; do
  for v in DEFAULT=1 ${VARIANTS:-}; do
    echo "== ${v/DEFAULT=1/default}, $sampling"
    setting=$v flags=""
    if [ "${v#--}" != "$v" ]; then setting=DEFAULT=1 flags=${v//,/ }; fi
    # shellcheck disable=SC2086  # $sampling is two or four words
    env ${setting//,/ } python3 bench/serve_decode_bench.py "$B/llmhost" "$spec" --device cuda --concurrency "${LEVELS:-1,8,32,128}" \
      --prompt-tokens "${PROMPT:-512}" --max-tokens "${MAX_TOKENS:-128}" --extra="$flags" $sampling >"$out/serve.log" 2>&1
    cat "$out/serve.log" >>"$out/serve_all.log"
    tail -n 7 "$out/serve.log"
  done
done
# The server's own time per request (default settings; OVERHEAD=0 skips it):
# on a model whose forward pass costs next to nothing, then the 8B shape's
# one-token latencies beside it.
if [ "${OVERHEAD:-1}" = 1 ]; then
  tiny=/tmp/tiny-llama.json
  echo '{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "intermediate_size": 128, "vocab_size": 32000, "max_position_embeddings": 4096}' >"$tiny"
  for m in "random:llama:bf16:$tiny:1" "$spec"; do
    python3 bench/serve_overhead_bench.py "$B/llmhost" "$m" --device cuda --requests "${REQUESTS:-100}" \
      >"$out/overhead.log" 2>&1
    tail -n 9 "$out/overhead.log"
  done
fi
