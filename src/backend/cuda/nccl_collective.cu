#include "backend/cuda/common.cuh"
#include "backend/cuda/nccl_collective.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void SumOverRanksKernel(const float* __restrict__ parts, int ranks, int64_t count,
                                   float* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= count) return;
  float s = parts[i];
  for (int r = 1; r < ranks; ++r) s = __fadd_rn(s, parts[r * count + i]);  // rank order, never reassociated
  out[i] = s;
}

}  // namespace

void LaunchSumOverRanks(const float* parts, int ranks, int64_t count, float* out, cudaStream_t s) {
  // A plain launch: the all-gather before it is NCCL's kernel, not one that
  // waits in WaitForPriorGrid.
  if (count > 0) SumOverRanksKernel<<<Blocks(count, kThreads), kThreads, 0, s>>>(parts, ranks, count, out);
}

}  // namespace llmhost::cuda
