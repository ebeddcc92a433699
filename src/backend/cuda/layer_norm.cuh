// LayerNorm with weight and bias over rows of `dim` values at `stride`, as
// the CPU reference computes it (mean and variance in f64).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmhost::cuda {

void LaunchLayerNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
                     const float* bias, float eps, float* out, cudaStream_t s);

}  // namespace llmhost::cuda
