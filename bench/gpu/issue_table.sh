#!/usr/bin/env bash
# On the lent GPU machine (an H200 for issue 14's goals), from the repository
# root with .devcarry carried (bench/gpu/pack.sh with model_bench): the
# issue's table at the defaults in one call, each figure beside its goal and
# llama.cpp's, for the Llama-3-8B shape with random weights.
#   bf16 and MLX 4-bit g64: decode at batch 1 after a 16-token prompt and
#   after 8,192 tokens, and a 512-token prefill; bf16: an 8,192-token prefill
#   and 8 / 32 / 128 sequences after 512-token prompts (128 new tokens each in
#   the issue; model_bench times 32 steps of the batch).
#   bench/gpu/issue_table.sh          (ROWS="b1 prefill8k batches": fewer;
#   ROWS=fit8k FIT_SEQS=N: N sequences of 8,192-token prompts, the memory row)
# VOCAB=128256 gives Llama-3's vocabulary (32000 by default, as the goals).
# Each model_bench run is killed after RUN_TIMEOUT seconds (300; its figures
# then read "-"). Logs land in $OUT (or /tmp/issue-table); the last lines are
# the table.
set -uo pipefail
out=${OUT:-/tmp/issue-table}
mkdir -p "$out"
. bench/gpu/stage.sh

mb() {  # mb LOG model_bench args...
  local log=$1
  shift
  timeout "${RUN_TIMEOUT:-300}" "$B/model_bench" --random-config "$cfg" --arch llama --seed 1 --group-size 64 \
    --device cuda --precisions auto --reps "${REPS:-3}" "$@" >"$out/$log" 2>&1
  echo "model_bench $* rc=$?" >>"$out/runs.txt"
}
# fig LOG REGEX: the first number the regex's group 1 matches in LOG ("-" when none).
fig() {
  local v
  v=$(grep -oE "$2" "$out/$1" 2>/dev/null | head -1 | sed -E "s#$2#\\1#")
  echo "${v:--}"
}
# row LABEL VALUE GOAL LLAMA_CPP: the figure, its goal and llama.cpp's (H200
# figures, tok/s), and the figure's ratio to each ("-" where it has none).
row() {
  local r
  r=$(awk -v v="$2" -v g="$3" -v c="$4" 'BEGIN {
    if (v !~ /^[0-9.]+$/) { print "- | -"; exit }
    printf "%.0f%% | %.2fx", 100 * v / g, v / c }')
  echo "| $1 | $2 | ≥ $3 | $4 | ${r% | *} | ${r#* | } |" | tee -a "$out/table.md"
}

rows=${ROWS:-b1 prefill8k batches}
: >"$out/runs.txt"
for r in $rows; do
  case $r in
    b1)
      for fmt in bf16 mlx4; do
        mb "b1_$fmt.log" --formats "$fmt" --prefill-reps 2 --steps 32 --prompt 16 --batch 8 --long-context 8192 \
          --phases decode1,long,prefill
      done
      ;;
    prefill8k)
      mb prefill8k.log --formats bf16 --prefill-reps 2 --prefill-tokens 8192 --phases prefill
      ;;
    fit8k)  # the memory row: FIT_SEQS sequences of 8,192-token prompts beside the weights (an H200's)
      mb fit8k.log --formats bf16 --steps 16 --reps 1 --prompt 8192 --batch "${FIT_SEQS:-96}" --phases decode-batch
      ;;
    batches)
      for b in 8 32 128; do
        mb "b$b.log" --formats bf16 --steps 32 --prompt 512 --batch "$b" --phases decode-batch
      done
      ;;
  esac
done

gpu=$(cat "$out/gpu.txt" 2>/dev/null)
bw=$(grep -ohE 'copy bandwidth at start[^:]*: [0-9.]+ GB/s' "$out"/*.log 2>/dev/null | head -1 | grep -oE '[0-9.]+ GB/s$')
echo
echo "$gpu; copy bandwidth ${bw:-?}" | tee "$out/table.md"
echo "| figure | llmhost tok/s | goal (H200) | llama.cpp (H200) | of the goal | vs llama.cpp |" | tee -a "$out/table.md"
echo "|---|---|---|---|---|---|" | tee -a "$out/table.md"
b1='auto[^:]*: prefill [0-9.]+, decode b1 ([0-9.]+)'
long='decode b1 after a 8192-token prompt ([0-9.]+) tok/s'
pre='auto[^:]*: prefill ([0-9.]+),'
case " $rows " in *" b1 "*)
  row "decode b1, bf16, 16-token prompt" "$(fig b1_bf16.log "$b1")" 267 189.7
  row "same, after 8,192 tokens" "$(fig b1_bf16.log "$long")" 200 140.9
  row "decode b1, MLX 4-bit g64 (llama.cpp: Q4_0)" "$(fig b1_mlx4.log "$b1")" 550 278
  row "same, after 8,192 tokens" "$(fig b1_mlx4.log "$long")" 400 193
  row "prefill 512, bf16" "$(fig b1_bf16.log "$pre")" 30000 19950
  ;;
esac
case " $rows " in *" prefill8k "*)
  row "prefill 8,192, bf16" "$(fig prefill8k.log "$pre")" 28000 18800
  ;;
esac
case " $rows " in *" batches "*)
  row "8 sequences, 512-token prompts" "$(fig b8.log 'decode b1 [0-9.]+, b8 ([0-9.]+) tok/s')" 2130 1064
  row "32 sequences, 512-token prompts" "$(fig b32.log 'decode b1 [0-9.]+, b32 ([0-9.]+) tok/s')" 5700 2805
  row "128 sequences, 512-token prompts" "$(fig b128.log 'decode b1 [0-9.]+, b128 ([0-9.]+) tok/s')" 13800 6370
  ;;
esac
case " $rows " in *" fit8k "*)
  n=${FIT_SEQS:-96}
  v=$(fig fit8k.log "decode b1 [0-9.]+, b$n ([0-9.]+) tok/s")
  echo "| $n sequences after 8,192-token prompts, bf16 K/V | $v | – | – | – | – |" | tee -a "$out/table.md"
  [ "$v" = - ] && grep -m2 -iE 'fail|error|memory' "$out/fit8k.log" | tee -a "$out/table.md"
  ;;
esac
