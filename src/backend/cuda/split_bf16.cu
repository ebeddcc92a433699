#include "backend/cuda/common.cuh"
#include "backend/cuda/split_bf16.cuh"

namespace llmhost::cuda {
namespace {

__global__ void SplitBf16Kernel(const float* x, int64_t count, uint16_t* hi, uint16_t* lo) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float v = x[i];
  const uint16_t h = F32ToBf16Bits(v);
  hi[i] = h;
  if (lo) lo[i] = F32ToBf16Bits(__fsub_rn(v, Bf16ToF32(h)));
}

}  // namespace

void LaunchSplitBf16(const float* x, int64_t count, uint16_t* hi, uint16_t* lo, cudaStream_t s) {
  if (count <= 0) return;
  constexpr int kThreads = 256;
  SplitBf16Kernel<<<Blocks(count, kThreads), kThreads, 0, s>>>(x, count, hi, lo);
}

}  // namespace llmhost::cuda
