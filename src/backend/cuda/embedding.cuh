// out[i, :] = row ids[i] of W * scale (W dense: f32, f16 or bf16 on the device).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"

namespace llmhost::cuda {

void LaunchEmbedding(Elem w_type, const void* w, int64_t cols, const int32_t* ids, int64_t n, float scale,
                     float* out, cudaStream_t s);

}  // namespace llmhost::cuda
