// Causal paged attention: one warp per (query row, head), online softmax
// over the keys the row sees (its window), K/V read through the sequence's
// block table in the cache's type. n_rows = Σ n_new over the sequences
// (AttentionParams::n_rows): the grid is sized by it, the row's sequence is
// found on the device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cuda {

constexpr int64_t kMaxAttentionHeadDim = 512;

void LaunchAttention(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                     int64_t n_seqs, const AttentionParams& p, float* out, cudaStream_t s);

}  // namespace llmhost::cuda
