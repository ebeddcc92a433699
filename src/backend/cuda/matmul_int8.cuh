// MLX 4-bit rows against int8 activations (integer dot products, dp4a):
// the CPU's kFastInt8 arithmetic (backend/cpu/matmul_int8_avx2.cpp) on the
// GPU, for the rows that run it there (generated rows at kAuto, every row
// at kFastInt8).
//
// x is quantized per 32 columns as the CPU does: dx = max|x| / 127,
// xq_i = round(x_i * (127 / max|x|)), xs = Σ x_i. The codes meet x centred,
// as on the CPU: a 32-column chunk of a weight row gives the exact integer
// S = Σ (q_i - 8) · xq_i (eight dp4a, less 8 · Σ xq), and the row's sum is,
// chunk after chunk in column order,
//   acc = fma(scale · dx, S, acc); acc = fma(bias + 8 · scale, xs, acc)
// per lane (lane l takes chunks l, l + 32, ...), then the warp's butterfly.
// A token's result depends on its own row of x and the weight alone (never
// on n or the tile it falls in), so the kernel is batch invariant. Error:
// only x is rounded, so |y - exact| <= Σ_i |scale · (q_i - 8)| · dx / 2
// (~0.5% of an output), the CPU's bound.
//
// Why: at one token the tensor-core GEMV spends its time converting codes
// to 16-bit floats (a quarter to a third of the memory's bandwidth); two
// integer instructions take eight codes here.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"

namespace llmhost::cuda {

// MLX 4-bit rows (groups of 32, 64 or 128 columns, 16-bit or f32 scales,
// rows 16-byte aligned) — a property of the weight alone.
bool Int8MlxRows(const DevWeight& w);

// Whether a and b can share one launch (Int8MlxRows, the same cols, group and scale type).
bool Int8Fusable(const DevWeight& a, const DevWeight& b);

// Bytes of n rows of x quantized for `cols` columns (LaunchQuantizeX's output).
int64_t Int8QxBytes(int64_t n, int64_t cols);

// x[n, cols] (cols a multiple of 32) quantized into qx (Int8QxBytes, 16-byte aligned).
void LaunchQuantizeX(const float* x, int64_t n, int64_t cols, void* qx, cudaStream_t s);

// y[i] = x · w[i]ᵀ for `count` (≤ 4) Int8Fusable weights, from x quantized
// by LaunchQuantizeX for w[0].cols; each y[i] is the bits of w[i] alone.
void LaunchInt8MlxMatMul(const DevWeight* w, float* const* y, int count, const void* qx, int64_t n,
                         cudaStream_t s);

}  // namespace llmhost::cuda
