// The chunk kernel of attention (attention.cuh) with a key per thread: each
// of a block's 128 threads takes one key of the chunk and sums its dot
// products with the group's q rows itself (columns in order, no warp
// reductions), and the outputs are summed by (key lane, 8 columns) threads
// whose lanes' sums are added in lane order. The partials have the same
// layout as the warp-per-key kernel's, so the same merge follows. For K/V
// rows of 64, 128 or 256 columns. The default (decode b1 on an H200: 124 ->
// 153 tok/s at 512 tokens of context, 113 -> 140 at 8K);
// LLMHOST_CUDA_DECODE_ATTENTION=warps gives the warp-per-key kernel (read at
// each call).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cuda {

bool KeyLanesEnabled();

// Whether this shape and these cache addresses suit the key-lanes kernel.
bool KeyLanesFit(const AttentionParams& p, const void* k_cache, const void* v_cache);

// One launch of the chunk kernel over rows [row0, row0 + rows): `part`
// receives the chunk partials, and `final` (unless null) the output of each
// row whose keys lie in one chunk (the merge then skips those rows).
void LaunchKeyLanesChunks(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                          int64_t n_seqs, const AttentionParams& p, int64_t row0, int64_t rows, int64_t n_chunks,
                          float* part, float* final, bool generated_only, cudaStream_t s);

}  // namespace llmhost::cuda
