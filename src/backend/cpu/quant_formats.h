// Weight storage formats: ggml block layouts, MLX bit packing, and the exact
// scalar dequantizers every other kernel is checked against.
//
// ggml blocks (ggml-common.h; all little-endian, blocks unaligned, so fields
// are read by byte offset, never through a struct):
//   Q4_0 (32 values, 18 bytes): d f16 @0, qs[16] @2. Value j < 16 is the low
//        nibble of qs[j], value j + 16 its high nibble; w = (q - 8) * d.
//   Q4_1 (32, 20): d @0, m @2, qs[16] @4; w = q * d + m.
//   Q5_0 (32, 22): d @0, qh u32 @2, qs[16] @6; bit j of qh is bit 4 of value j
//        (j + 16: bit j + 16); w = (q - 16) * d.
//   Q5_1 (32, 24): d @0, m @2, qh @4, qs @8; w = q * d + m.
//   Q8_0 (32, 34): d @0, int8 qs[32] @2; w = q * d.
//   Q4_K (256, 144): d @0, dmin @2, scales[12] @4, qs[128] @16. Eight
//        sub-blocks of 32; sub-block j takes the low (even j) or high (odd j)
//        nibbles of qs[32*(j/2) .. +32]; its 6-bit scale sc and min m come
//        from GetScaleMinK4(j); w = (d*sc) * q - (dmin*m).
//   Q5_K (256, 176): d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48;
//        as Q4_K, plus bit j of qh[l] is bit 4 of value l of sub-block j.
//   Q6_K (256, 210): ql[128] @0, qh[64] @128, int8 scales[16] @192, d f16 @208.
//        Two halves of 128 values (ql + 64h, qh + 32h, scales + 8h); value
//        32*i + l of a half (i < 4, l < 32): low 4 bits from ql[l + 32*(i&1)]
//        (low nibble for i < 2, high for i >= 2), high 2 bits from qh[l] bits
//        2i..2i+1; q - 32; w = (d * scales[l/16 + 2i]) * (q - 32).
//   Q8_K (256, 292): d f32 @0, int8 qs[256] @4, int16 bsums[16] @260; w = d*q.
//
// MLX affine (mlx.core.quantize): each row's values form one little-endian
// bit stream, value i in bits [i*bits, (i+1)*bits); for 2, 4 and 8 bits that
// is "value j of a uint32 word in its j-th lowest field", for 3, 5 and 6 bits
// groups of 8 (3, 5 bits) or 4 (6 bits) values straddle 3, 5 or 3 bytes the
// same way. w = scale * q + bias, rounded to f32 after the multiply and after
// the add (no fused multiply-add).
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/weight_matrix.h"

namespace llmhost::quant {

inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float LoadF32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// Returns v unchanged, but as a value the compiler must materialise: a product
// passed through it is rounded to f32 and never fused into a following add
// (GCC contracts a*b+c into an FMA by default, even across intrinsics).
inline float Rounded(float v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+x"(v));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(v));
#else
  volatile float t = v;
  v = t;
#endif
  return v;
}

// Sub-block j's (0..7) 6-bit scale and min in the 12 packed bytes of a Q4_K or
// Q5_K block: j < 4 in the low 6 bits of bytes j and j+4; j >= 4 in the
// nibbles of byte j+4 with their top two bits from the top of bytes j-4 and j.
inline void GetScaleMinK4(int j, const uint8_t* s, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Elements per block of a ggml type handled here (1 for F32/F16/BF16), or 0
// when the kernels do not support the type.
int GgmlBlockSize(GgmlType t);
// Bytes per block, or 0 when unsupported.
int GgmlBlockBytes(GgmlType t);

// Columns that dequantization ranges must start at (a multiple of): the ggml
// block size, 32 for MLX (a whole number of bytes for every bit width, and
// within one group), 1 for plain floats.
int64_t DequantAlignment(const WeightMatrix& w);

// Bytes of one stored row of `w` (data only; MLX scales and biases apart).
int64_t RowBytes(const WeightMatrix& w);

// Exact scalar dequantization of row `row`, columns [c0, c1), into out[c1-c0].
// c0 must be a multiple of DequantAlignment(w) and c1 such a multiple or
// w.cols. `w` must have passed CheckWeight.
void DequantizeRangeScalar(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1, float* out);

// The pieces, for tests.
void DequantizeGgmlBlocksScalar(GgmlType t, const uint8_t* blocks, int64_t n_blocks, float* out);
void DequantizeMlxRangeScalar(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1,
                              float* out);
// A scale or bias of an MLX matrix (index into the [rows, cols/group] array).
float MlxParam(const WeightMatrix& w, const void* params, int64_t index);

}  // namespace llmhost::quant
