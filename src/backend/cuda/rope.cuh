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

// Backend::RopeStoreKv in one launch: q and k rotated (one table for every
// token) and written back, k and v stored into cache rows slots[i]. False,
// with nothing launched, where q and k differ in head shape or rotation, or
// k's heads are not kv_dim wide.
bool LaunchRopeStoreKv(float* q, const RopeParams& rq, float* k, const RopeParams& rk, const float* v,
                       int64_t v_stride, int64_t n, const int32_t* positions, const float* inv_freq, int64_t kv_dim,
                       const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype, cudaStream_t s);

}  // namespace llmhost::cuda
