// RMSNorm over rows of `dim` values, as the CPU reference computes it (sum
// of squares in f64, variance and rsqrt as transformers do). Row r starts at
// (r / group) * group_stride + (r % group) * dim: group = 1 for plain rows
// at a stride, group = heads for every head of every token (RmsNormHeads).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmhost::cuda {

void LaunchRmsNorm(const float* x, int64_t rows, int64_t group, int64_t group_stride, int64_t dim,
                   const float* weight, float eps, bool add_one, float* out, cudaStream_t s);

// x += t, then out = RmsNorm(x), over rows of dim contiguous values, in one
// launch: the bits of LaunchAdd and then LaunchRmsNorm.
void LaunchAddRmsNorm(float* x, const float* t, int64_t rows, int64_t dim, const float* weight, float eps,
                      bool add_one, float* out, cudaStream_t s);

}  // namespace llmhost::cuda
