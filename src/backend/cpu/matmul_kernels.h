// Internal interface between the matmul driver (matmul.cpp) and the kernels of
// each instruction set (matmul_avx2.cpp, quant_avx2.cpp). Not for other layers.
//
// The fast path computes every output y[t][r] in one canonical order, whatever
// the batch size n, the tile it falls in or the thread that runs it:
//   acc (8 f32 lanes) = 0; for k = 0, 8, 16, ...: acc = fma(w[r][k..k+8],
//   x[t][k..k+8], acc) (the last step masked to the columns left);
//   y = ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
// Weights are dequantized exactly (the same f32 values as the scalar
// reference dequantizer) before they meet x, so the result depends only on
// the row of x and the row of W: batch invariance by construction.
#pragma once

#include <cstdint>

#include "backend/weight_matrix.h"

namespace llmhost::cpu {

// Dequantizes row `row`, columns [c0, c1), exactly into out[c1 - c0]
// (alignment rules of quant::DequantizeRangeScalar).
using DequantRangeFn = void (*)(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1,
                                float* out);

struct FastKernels {
  const char* name;
  // The dequantizer for w's format (never null for a checked matrix).
  DequantRangeFn (*select_dequant)(const WeightMatrix& w);
  // For t < nx, r < nw: acc[t][r] (8 floats at acc + (t * acc_ld + r) * 8)
  // continues the canonical chain over x[t][0..kc) · w[r][0..kc) (x rows
  // ldx apart, w rows ldw apart); starts from zero when `init`.
  void (*gemm_chunk)(const float* x, int64_t ldx, int64_t nx, const float* w, int64_t ldw,
                     int64_t nw, int64_t kc, float* acc, int64_t acc_ld, bool init);
  // y[t * ldy + r] = the canonical sum of acc[t][r]'s lanes.
  void (*reduce)(const float* acc, int64_t nx, int64_t nw, int64_t acc_ld, float* y,
                 int64_t ldy);
};

// AVX2 dequantizers (quant_avx2.cpp); the same values as the scalar ones.
DequantRangeFn SelectDequantAvx2(const WeightMatrix& w);

// The AVX2 + FMA + F16C kernels, or null when this build has none (non-x86).
const FastKernels* Avx2Kernels();

}  // namespace llmhost::cpu
