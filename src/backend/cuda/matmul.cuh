// y[n, rows] = x[n, cols] · Wᵀ with f32 accumulation (no TF32): every output
// is one warp's strided sum and butterfly over its weight row, so a row's
// bits depend on its own token only, never on the batch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"

namespace llmhost::cuda {

void LaunchMatMul(Elem w_type, const void* w, const float* x, int64_t n, int64_t rows, int64_t cols,
                  float* y, cudaStream_t s);

// As LaunchMatMul with a weight per token: token t multiplies
// table[sel[t * sel_stride]] (skipped, y untouched, when that id is < 0).
void LaunchGroupedMatMul(Elem w_type, const void* const* table, const int32_t* sel, int64_t sel_stride,
                         const float* x, int64_t n, int64_t rows, int64_t cols, float* y, cudaStream_t s);

}  // namespace llmhost::cuda
