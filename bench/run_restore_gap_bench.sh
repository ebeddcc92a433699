#!/usr/bin/env bash
# Inter-token gaps of a running stream while another request restores an
# 8,192-token prefix from the SSD tier (issue 12), on the synthetic Llama-1B
# shape of run_kv_tier_bench.sh (bf16, max_position_embeddings 16384, the
# same model cache and variables: BUILD, LLMHOST_BENCH_MODELS, DTYPE, WORK).
# bench/restore_gap_bench.py does the measuring; extra arguments go to it
# (e.g. --tokens 4096, --decode-tokens 400, --reuse with WORK set).
#
#   BUILD=build bench/run_restore_gap_bench.sh
BENCH=restore_gap_bench.py exec "$(dirname "$0")/run_kv_tier_bench.sh" "$@"
