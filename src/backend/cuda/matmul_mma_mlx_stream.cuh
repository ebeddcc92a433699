// One generated row of MLX 4/8-bit weights, streamed: matmul_mma_mlx.cu's
// tensor-core GEMV with the same sums in the same order (its bits), but with
// resident blocks that walk 15-row tiles while a cp.async ring in shared
// memory keeps each warp's next steps (codes, the groups' scales and
// biases, x) in flight, as matmul_mma_stream.cuh does for bf16 rows. At one
// token the plain kernel loads a round, waits, then spends long on the
// codes with nothing in flight (0.7-1.1 TB/s measured).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/mma_bf16.cuh"

namespace llmhost::cuda {

// LLMHOST_CUDA_MLX_STREAM: "off" (the plain kernel) or "on"; read at each launch.
bool MlxStreamEnabled();

// Launches ws (MLX rows that MmaMlxRows accepts, ws.first unset) for n == 1
// when the streamed kernel applies (enabled, x 16-byte aligned, at least two
// groups a step); false if not, and nothing was launched.
bool LaunchMmaMlxStream(MmaWeights ws, const float* x, int64_t n, bool split, bool early, cudaStream_t s);

}  // namespace llmhost::cuda
