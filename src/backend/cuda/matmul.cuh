// y[n, rows] = x[n, cols] · Wᵀ with f32 accumulation (no TF32), W read in
// its stored format (weight_load.cuh). Where cols is a multiple of 8, every
// output is one block's sum over its weight row: each thread's chunks in
// column order (16-byte loads; matmul.cu says which format takes how many
// columns), its warp's butterfly, then the warps in order; otherwise one
// warp's strided sum over single columns. Either way a row's bits depend on
// its own token and the weight's shape only, never on the batch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"

namespace llmhost::cuda {

void LaunchMatMul(const DevWeight& w, const float* x, int64_t n, float* y, cudaStream_t s);

// LaunchMatMul of `count` (≤ kMaxFusedWeights) weights over the same x, as
// one launch, with the same bits: false (nothing launched) unless every
// weight goes through the same wide kernel (format, cols, chunking).
constexpr int kMaxFusedWeights = 4;
bool LaunchFusedMatMul(const DevWeight* w, float* const* y, int count, const float* x, int64_t n, cudaStream_t s);

// As LaunchMatMul with a weight per token: token t multiplies
// table[sel[t * sel_stride]] (a device array of weights of one format, the
// shape of `like`); y's row t is untouched when that id is < 0.
void LaunchGroupedMatMul(const DevWeight& like, const DevWeight* table, const int32_t* sel, int64_t sel_stride,
                         const float* x, int64_t n, float* y, cudaStream_t s);

}  // namespace llmhost::cuda
