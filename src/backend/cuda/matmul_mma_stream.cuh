// One to eight generated rows of bf16 weights, streamed: the tensor-core GEMV
// of matmul_mma.cu with the same sums in the same order (so the same bits,
// and batch invariance with its larger shapes), but each block stays
// resident and walks row tiles one after another, while a ring of cp.async
// stages in shared memory keeps each warp's next steps (weight chunks and x)
// in flight as it sums the current one, across the end of a tile too.
//
// Why: at one token the plain kernel's blocks load a round of steps, wait,
// sum, load again, and leave in waves; the small weights (q/k/v and o of an
// 8B model: 1.5 and 1 waves) reach ~57% of the copy bandwidth that way.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/mma_bf16.cuh"

namespace llmhost::cuda {

// The ring's depth in steps, from LLMHOST_CUDA_GEMV_STREAM: "off" (0: the
// plain kernel), "3" (two blocks an SM) or "6" (one); read at each launch.
int MmaStreamStages();

// Launches ws (bf16, ws.first unset) for n ≤ 8 tokens when the streamed
// kernel applies (MmaStreamStages() > 0, x 16-byte aligned); false if not,
// and nothing was launched.
bool LaunchMmaStream(MmaWeights ws, const float* x, int64_t n, bool split, bool early, cudaStream_t s);

}  // namespace llmhost::cuda
