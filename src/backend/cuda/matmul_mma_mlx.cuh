// Generated rows of MLX 4- and 8-bit weights (affine, groups of 32 or 64
// columns) on the tensor cores: LaunchMmaMatMul's MLX half (matmul_mma.cuh has the
// contract: batch invariant, chosen by the weight alone).
//
// The codes are multiplied as they are stored: a code q (0..255) is exact in
// bf16, so an MMA of codes against x gives each group's Σ q·x, and a
// group's part of a row's sum is scale · Σ q·x + bias · Σ x, in f32. Σ x
// comes from the same MMA: row 15 of every 16-row tile is all ones (a tile
// holds 15 weight rows), so it is the sum of exactly the bf16 terms the
// codes were multiplied with. The result is then within x's rounding
// (hi + rest at kAuto, ~2^-17 relative) of the exact Σ w·x of the CPU
// reference's dequantized weights, as for bf16 rows.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"

namespace llmhost::cuda {

// MLX 4-bit (cols a multiple of 128) or 8-bit (of 64) rows with groups of 32
// or 64 columns, 16-bit scales and biases, and the alignment of an uploaded
// weight.
bool MmaMlxRows(const DevWeight& w);

// One token tile's rows load a warp's next steps while it sums the current
// ones (the same sums): opt-in until it has run on a GPU
// (LLMHOST_CUDA_MLX_PIPELINE=on; read at each launch).
bool MlxPipelineEnabled();

// LaunchMmaMatMul for weights that are all MmaMlxRows and MmaFusable.
void LaunchMmaMlxMatMul(const DevWeight* w, float* const* y, int count, const float* x, int64_t n, bool split,
                        cudaStream_t s);

}  // namespace llmhost::cuda
