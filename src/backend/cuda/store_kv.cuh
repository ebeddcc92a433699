// Writes k/v[n, kv_dim] (row strides given) into cache rows slots[i] of
// k_cache / v_cache in the cache's type (16 bits: rounded to nearest even,
// the CPU's bits).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "formats/dtype.h"

namespace llmhost::cuda {

void LaunchStoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n, int64_t kv_dim,
                   const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype, cudaStream_t s);

}  // namespace llmhost::cuda
