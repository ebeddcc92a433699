// The cheap ops: sums, biases, scaling, fills, soft-capping, exact GELU,
// tanh, row gathers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmhost::cuda {

void LaunchAdd(const float* a, const float* b, int64_t n, float* out, cudaStream_t s);
void LaunchAddBias(float* x, int64_t rows, int64_t cols, int64_t stride, const float* bias, cudaStream_t s);
void LaunchScale(float* x, int64_t n, float v, cudaStream_t s);
void LaunchFill(float* x, int64_t n, float v, cudaStream_t s);
void LaunchSoftcap(float* x, int64_t n, float cap, cudaStream_t s);
// x[i] = 0.5·x·(1 + erf(x/√2)); x[i] = tanh(x[i]) (both in f64, as the CPU).
void LaunchGelu(float* x, int64_t n, cudaStream_t s);
void LaunchTanh(float* x, int64_t n, cudaStream_t s);
// dst[i, :] = src[rows[i], :].
void LaunchGatherRows(const float* src, int64_t cols, const int32_t* rows, int64_t n, float* dst, cudaStream_t s);
// dst[t, j] = src[t, order[j]], t < n, j < cols (a weight's stored column order).
void LaunchGatherColumns(const float* src, int64_t n, int64_t cols, const int32_t* order, float* dst, cudaStream_t s);

}  // namespace llmhost::cuda
