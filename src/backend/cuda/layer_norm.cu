#include "backend/cuda/common.cuh"
#include "backend/cuda/layer_norm.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

// The block's sum of v (f64), the same order for every row of one dim.
__device__ double BlockSum(double v, double* part) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < kWarps; ++w) total += part[w];
  __syncthreads();  // part is reused by the next call
  return total;
}

// One block per row: the mean, then the variance around it, both in f64.
__global__ void __launch_bounds__(kThreads) LayerNormKernel(const float* x, int64_t dim, int64_t stride,
                                                             const float* weight, const float* bias, float eps,
                                                             float* out) {
  WaitForPriorGrid();
  __shared__ double part[kWarps];
  const float* xr = x + blockIdx.x * stride;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) sum += xr[i];
  const double mean = BlockSum(sum, part) / static_cast<double>(dim);
  double ss = 0;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) ss += (xr[i] - mean) * (xr[i] - mean);
  const double inv = 1.0 / sqrt(BlockSum(ss, part) / static_cast<double>(dim) + eps);
  float* yr = out + blockIdx.x * stride;  // in place allowed: each thread rewrites only what it read
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    yr[i] = static_cast<float>((xr[i] - mean) * inv) * weight[i] + bias[i];
  }
}

}  // namespace

void LaunchLayerNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
                     const float* bias, float eps, float* out, cudaStream_t s) {
  if (rows <= 0 || dim <= 0) return;
  LaunchPdl(LayerNormKernel, static_cast<unsigned>(rows), kThreads, 0, s, x, dim, stride, weight, bias, eps, out);
}

}  // namespace llmhost::cuda
