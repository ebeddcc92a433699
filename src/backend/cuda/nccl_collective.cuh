// The rank-order sum behind NcclCollective's all-reduce over more than two
// GPUs (cuda/nccl_collective.cpp): NCCL gathers every rank's buffer, this
// kernel adds them up in a fixed order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmhost::cuda {

// out[i] = ((parts[0][i] + parts[1][i]) + parts[2][i]) + ... for i < count,
// where parts[r] = parts + r * count: the same bits on every rank, and for
// each element whatever count.
void LaunchSumOverRanks(const float* parts, int ranks, int64_t count, float* out, cudaStream_t s);

}  // namespace llmhost::cuda
