// Internal interface between the matmul driver (matmul.cpp) and the kernels of
// each instruction set (matmul_avx2.cpp; an AVX-512 set would fill the same
// table). Not for other layers.
//
// The fast path computes every output y[t][r] in one canonical order, whatever
// the batch size n, the tile it falls in or the thread that runs it:
//   acc (8 f32 lanes) = 0; for k = 0, 8, 16, ...: acc = fma(w[r][k..k+8],
//   x[t][k..k+8], acc) (lanes past cols: +0 * +0);
//   y = ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
// Weights are dequantized exactly (the same f32 values as the scalar
// reference decoders) before they meet x. The small-batch kernel decodes
// weights in registers and the large-batch kernel through a packed panel,
// but both follow this order, so a row of x gives the same bits either way:
// batch invariance by construction (and tested).
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

  // Batches of at most max_fused_n rows: y[t * ldy + r] for t < n and r in
  // [r0, r1), each weight row streamed once and decoded in registers.
  int64_t max_fused_n;
  void (*fused)(const WeightMatrix& w, const float* x, int64_t n, int64_t r0, int64_t r1, float* y,
                int64_t ldy);

  // Larger batches: x is first packed (tiles of x_tile_rows rows, zero padded)
  // into packed_x_floats(n, cols) floats, tiles [i0, i1) per call, then
  // panels of up to panel_rows weight rows run against the packed x.
  int64_t x_tile_rows;
  int64_t (*packed_x_floats)(int64_t n, int64_t cols);
  void (*pack_x)(const float* x, int64_t n, int64_t cols, int64_t i0, int64_t i1, float* xp);
  int64_t panel_rows;
  void (*panel)(const WeightMatrix& w, const float* xp, int64_t n, int64_t r0, int64_t r1, float* y,
                int64_t ldy);
};

// The 8-bit-activation path (MatMulPrecision::kFastInt8) for weights with
// integer codes (MLX, GGUF block types); order and error in
// matmul_int8_avx2.cpp.
struct Int8Kernels {
  // False for formats without integer codes (plain floats).
  bool (*supported)(const WeightMatrix& w);
  // Bytes of the quantized copy of n rows of x (for w's format).
  int64_t (*qx_bytes)(const WeightMatrix& w, int64_t n);
  // Quantizes rows [t0, t1) of x into qx (for w's format: its code offset).
  void (*quantize_x)(const WeightMatrix& w, const float* x, int64_t n, int64_t t0, int64_t t1, void* qx);
  // y[t * ldy + r] for every t < n and r in [r0, r1).
  void (*rows)(const WeightMatrix& w, void* qx, int64_t n, int64_t r0, int64_t r1, float* y, int64_t ldy);
};
// Register-blocked kernels for the common formats (MLX 4/8-bit, Q4_0;
// matmul_int8_unit_avx2.cpp), tried first; then the general ones
// (matmul_int8_avx2.cpp). Null when this build has none.
const Int8Kernels* Avx2Int8UnitKernels();
const Int8Kernels* Avx2Int8Kernels();

// BF16 dot-product kernels (MatMulPrecision::kFastBf16; matmul_amx.cpp: AMX
// tiles or AVX512_BF16): x is rounded to bf16 and packed once per call in
// blocks of block_tokens tokens (packed_x_bytes(n, cols) bytes, token blocks
// [b0, b1) per pack_x call), then tasks of panel_rows weight rows run
// against all of it.
struct Bf16Kernels {
  const char* name;
  int64_t block_tokens;
  int64_t (*packed_x_bytes)(int64_t n, int64_t cols);
  void (*pack_x)(const float* x, int64_t n, int64_t cols, int64_t b0, int64_t b1, void* xp);
  int64_t panel_rows;
  // y[t * ldy + r] for t < n and r in [r0, r1), r1 - r0 <= panel_rows.
  void (*panel)(const WeightMatrix& w, const void* xp, int64_t n, int64_t r0, int64_t r1, float* y,
                int64_t ldy);
};
// AMX's when ActiveCpuIsa() is kAmx, VDPBF16PS's when kAvx512Bf16, else null
// (cpu_features.h).
const Bf16Kernels* ActiveBf16Kernels();

// AVX2 dequantizers (quant_avx2.cpp); the same values as the scalar ones.
DequantRangeFn SelectDequantAvx2(const WeightMatrix& w);

// The AVX2 + FMA + F16C kernels, or null when this build has none (non-x86).
const FastKernels* Avx2Kernels();

}  // namespace llmhost::cpu
