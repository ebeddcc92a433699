// out[i, :] = row ids[i] of W (dequantized as MatMul reads it) * scale.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"

namespace llmhost::cuda {

// Ids outside [first_id, first_id + w.rows) give rows of zeros.
void LaunchEmbedding(const DevWeight& w, const int32_t* ids, int64_t n, float scale, float* out, int64_t first_id,
                     cudaStream_t s);

}  // namespace llmhost::cuda
