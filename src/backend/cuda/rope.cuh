// RoPE in place over x[n_tokens, row_stride]: token t's heads rotated by
// positions[t] * inv_freq[i] (an f32 product, then cos/sin in f64, as the
// CPU reference), with inv_freq + table_of[t] * table_stride when table_of
// is given (a table per sequence).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cuda {

void LaunchRope(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                int64_t table_stride, const int32_t* table_of, const RopeParams& p, cudaStream_t s);

}  // namespace llmhost::cuda
