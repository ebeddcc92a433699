// Generated rows of 16-bit brain-float weights on the tensor cores, batch
// invariant: y[n, rows] = x[n, cols] · Wᵀ where each token's row of y is the
// same bits alone and in any batch.
//
// Why it holds: a token is one column of an m16n8k16 MMA whose other
// columns are other tokens (or zeros); an MMA's output element depends on its
// own row and column only, and every token walks the weight's columns in the
// same order (each warp a fixed set of 32-column steps, the warps' sums then
// added in warp order), whatever n is or where the token sits in the tile.
//
// x is f32: `split` multiplies it as two bf16 terms (hi + the rounding rest,
// ~16 bits of mantissa, at kAuto); without it x is rounded to bf16 once
// (kFastBf16). The weight is read with wide loads (each lane 16 bytes of a
// row per step), once per 32 tokens. Up to 8 tokens a block's warps split
// the columns (matmul_mma.cu); past 8 its warps split the rows and share x
// in shared memory, the columns dealt over a cluster of blocks where the
// rows are few (matmul_mma_wide.cu): the same sums in the same order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"

namespace llmhost::cuda {

// Whether `w`'s generated rows can go through LaunchMmaMatMul: bf16 rows
// whose columns are a multiple of 64, or MLX 4/8-bit rows (MmaMlxRows,
// matmul_mma_mlx.cuh) — a property of the weight alone.
bool MmaRows(const DevWeight& w);

// bf16 rows with a warp's next steps loaded while it sums the current ones
// (the same sums): opt-in until it has run on a GPU
// (LLMHOST_CUDA_MMA_PIPELINE=on; read at each launch).
bool MmaPipelineEnabled();

// The tensor-core GEMVs issue their first weight loads before they wait for
// the kernel before them (programmatic dependent launch: weights are never
// written by a step, so only x has to wait); LLMHOST_CUDA_EARLY_WEIGHTS=off
// waits first (read at each launch). The sums do not change.
bool EarlyWeightLoadsEnabled();

// Whether a and b can share one launch (the same kernel: format, cols, MLX
// bits and group size).
bool MmaFusable(const DevWeight& a, const DevWeight& b);

// The device scratch LaunchMmaMatMul's `terms` needs for n tokens of the
// `count` weights w (x's bf16 terms for the GEMM-shaped kernel of a large
// batch); 0 where that kernel does not take the launch.
int64_t MmaTermsBytes(const DevWeight* w, int count, int64_t n, bool split);

// y[i] = x · w[i]ᵀ for `count` (≤ 4) weights that are MmaFusable with w[0],
// in one launch; each y[i] is what a launch of w[i] alone gives, bit for bit.
// `terms`: MmaTermsBytes(w, count, n, split) bytes of device scratch, or null
// (a large batch then takes the wide kernel: the same sums, slower).
void LaunchMmaMatMul(const DevWeight* w, float* const* y, int count, const float* x, int64_t n, bool split,
                     cudaStream_t s, uint16_t* terms = nullptr);

}  // namespace llmhost::cuda
