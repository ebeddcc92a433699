#include "backend/cuda/common.cuh"
#include "backend/cuda/rms_norm.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void RmsNormKernel(const float* x, int64_t group, int64_t group_stride, int64_t dim,
                              const float* weight, float eps, bool add_one, float* out) {
  const int64_t r = blockIdx.x;
  const int64_t off = (r / group) * group_stride + (r % group) * dim;
  const float* xr = x + off;
  double ss = 0;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) ss += static_cast<double>(xr[i]) * xr[i];
  __shared__ double part[kThreads];
  part[threadIdx.x] = ss;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  const float var = static_cast<float>(part[0] / static_cast<double>(dim));
  const float inv = static_cast<float>(1.0 / sqrt(static_cast<double>(var + eps)));
  float* yr = out + off;  // in place allowed: each thread rewrites only what it read
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    const float wv = add_one ? 1.0f + weight[i] : weight[i];
    yr[i] = (xr[i] * inv) * wv;
  }
}

}  // namespace

void LaunchRmsNorm(const float* x, int64_t rows, int64_t group, int64_t group_stride, int64_t dim,
                   const float* weight, float eps, bool add_one, float* out, cudaStream_t s) {
  if (rows <= 0) return;
  RmsNormKernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, group, group_stride, dim, weight, eps, add_one, out);
}

}  // namespace llmhost::cuda
