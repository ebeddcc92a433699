#!/usr/bin/env bash
# A short check on the lent GPU (.devcarry carried): the attention tests on the CUDA backend, the engine's
# CUDA tests, and bf16 decode after an 8,192-token prompt (Llama-3-8B shape, random weights).
set -uo pipefail
s=/tmp/llmhost-stage
mkdir -p "$s"
tar -C "$s" -xJf .devcarry/stage.tar.xz || exit 1
export LD_LIBRARY_PATH=$s/lib
B=$s/bin
nvidia-smi --query-gpu=name --format=csv,noheader
"$B/backend_tests" --gtest_filter='*Attention*cuda*:*KeyLanes*:*PromptAttention*:*FusedLayerSteps*cuda*' 2>&1 |
  grep -E '^\[  (PASSED|FAILED)|FAILED  \]'
"$B/engine_tests" --gtest_filter='Cuda*' 2>&1 | grep -E '^\[  (PASSED|FAILED)|FAILED  \]'
cat >/tmp/llama8b.json <<'JSON'
{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
 "intermediate_size": 14336, "vocab_size": 32000, "tie_word_embeddings": false, "max_position_embeddings": 16384}
JSON
"$B/model_bench" --random-config /tmp/llama8b.json --arch llama --seed 1 --device cuda --precisions auto --reps 2 \
  --steps 16 --prompt 16 --batch 1 --long-context 8192 --formats bf16 --phases long 2>&1 | grep -E 'copy bandwidth at start|after a'
