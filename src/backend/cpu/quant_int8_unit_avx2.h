// Weight decoders of the register-blocked int8 kernels (matmul_int8_unit_avx2.cpp)
// for the formats that matter most: MLX 4-bit and 8-bit (groups 32/64/128)
// and GGUF Q4_0, with cols a multiple of 128. (Q8_0 stays with the per-block
// kernel of matmul_int8_avx2.cpp, as fast on AVX2: its blocks need no scale
// or bias arithmetic beyond one multiply.)
//
// A decoder yields one "unit" of a weight row (kUnit columns) as integer
// codes in registers, in an order that the activations are stored in too,
// and Dot(codes, x) gives 8 int32 lanes, lane l summing the products of the
// values of one 32-value block, Block(l):
//   4-bit (kUnit 128, int8 activations): codes 0..15 meet int8 activations in
//     4 maddubs (four products of at most 15 * 127 per int16: no overflow),
//     summed in int16, then one madd; 16 values per lane;
//     Block(l) = 0, 0, 2, 2, 1, 1, 3, 3.
//   8-bit (kUnit 64, int16 activations): codes as int16 (centred: q - 128)
//     in 4 madd, 8 values per lane; Block(l) = 0, 0, 0, 0, 1, 1, 1, 1.
//     (int8 activations would need ggml's |q| * sign trick: three multiplier
//     instructions per 32 values instead of two.)
// Code order: the 4-bit codes of a unit are loaded as two 32-byte registers
// va, vb (32-bit lanes 0-3 of va hold block 0, 4-7 block 1; vb blocks 2, 3),
// rearranged as c0 = blend(va, vb; lanes 2, 3, 6, 7 from vb) and c1 = the same
// of va, vb with their 64-bit halves swapped in each 128-bit lane, then split
// into low and high nibbles: registers lo(c0), hi(c0), lo(c1), hi(c1). The
// activations are stored in that order (matmul_int8_unit_avx2.cpp builds them
// with the same operations), so both sides line up without per-product
// shuffles. MLX 4-bit byte j of a 64-value half holds values 2j (low nibble)
// and 2j+1; Q4_0 byte j of a block holds values j and j + 16.
//
// Scales: W8(row, u) is the scale of each lane's block (MLX: its group's
// scale from the row's f32 scales S; ggml: the block's d). MLX rows also get
// C[g] = bias + kOffsetX * scale per group (PrepRow): the constant that the
// centred integer dot leaves out, times Σx of the group.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/quant_avx2_decode.h"

namespace llmhost::cpu::int8u {

enum class Family { kNibbles, kWide };

// --- 4-bit ------------------------------------------------------------------

struct Nibbles {
  __m256i c[4];  // lo(c0), hi(c0), lo(c1), hi(c1)
};

// c0, c1 of the header comment.
AVX2_FN inline void Interleave(__m256i va, __m256i vb, __m256i* c0, __m256i* c1) {
  *c0 = _mm256_blend_epi32(va, vb, 0xCC);
  *c1 = _mm256_blend_epi32(_mm256_shuffle_epi32(va, 0x4E), _mm256_shuffle_epi32(vb, 0x4E), 0xCC);
}

AVX2_FN inline Nibbles SplitNibbles(__m256i va, __m256i vb) {
  __m256i c0, c1;
  Interleave(va, vb, &c0, &c1);
  const __m256i m = _mm256_set1_epi8(0x0F);
  return {{_mm256_and_si256(c0, m), _mm256_and_si256(_mm256_srli_epi16(c0, 4), m), _mm256_and_si256(c1, m),
           _mm256_and_si256(_mm256_srli_epi16(c1, 4), m)}};
}

AVX2_FN inline __m256i Dot(const Nibbles& q, const int8_t* xq) {
  const __m256i* x = reinterpret_cast<const __m256i*>(xq);
  const __m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(q.c[0], _mm256_loadu_si256(x)),
                                      _mm256_maddubs_epi16(q.c[1], _mm256_loadu_si256(x + 1)));
  const __m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(q.c[2], _mm256_loadu_si256(x + 2)),
                                      _mm256_maddubs_epi16(q.c[3], _mm256_loadu_si256(x + 3)));
  return _mm256_madd_epi16(_mm256_add_epi16(p0, p1), _mm256_set1_epi16(1));
}

// --- 8-bit ------------------------------------------------------------------

struct Wide {
  __m256i c[4];  // int16: [values 8j..8j+7 | 32+8j..32+8j+7], j = 0..3
};

// The 64 signed bytes of two blocks (a: values 0..31, b: 32..63) as the four
// int16 registers of Wide.
AVX2_FN inline Wide Widen(__m256i a, __m256i b) {
  const __m256i lo = _mm256_unpacklo_epi64(a, b), hi = _mm256_unpackhi_epi64(a, b);
  return {{_mm256_cvtepi8_epi16(_mm256_castsi256_si128(lo)), _mm256_cvtepi8_epi16(_mm256_castsi256_si128(hi)),
           _mm256_cvtepi8_epi16(_mm256_extracti128_si256(lo, 1)),
           _mm256_cvtepi8_epi16(_mm256_extracti128_si256(hi, 1))}};
}

AVX2_FN inline __m256i Dot(const Wide& q, const int8_t* xq) {
  const __m256i* x = reinterpret_cast<const __m256i*>(xq);
  const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(q.c[0], _mm256_loadu_si256(x)),
                                     _mm256_madd_epi16(q.c[1], _mm256_loadu_si256(x + 1)));
  const __m256i t = _mm256_add_epi32(_mm256_madd_epi16(q.c[2], _mm256_loadu_si256(x + 2)),
                                     _mm256_madd_epi16(q.c[3], _mm256_loadu_si256(x + 3)));
  return _mm256_add_epi32(s, t);
}

// --- scales -----------------------------------------------------------------

// Converts n scale-dtype values at p to f32 into out[0..n).
AVX2_FN inline void ParamsToF32(const uint8_t* p, DType dt, int64_t n, float* out) {
  if (dt == DType::kF32) {
    std::memcpy(out, p, static_cast<size_t>(n) * 4);
    return;
  }
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i));
    const __m256 f = dt == DType::kF16 ? _mm256_cvtph_ps(h)
                                       : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    _mm256_storeu_ps(out + i, f);
  }
  for (; i < n; ++i) {
    const uint16_t h = quant::LoadU16(p + 2 * i);
    if (dt == DType::kF16) {
      out[i] = _cvtsh_ss(h);
    } else {
      const uint32_t bits = static_cast<uint32_t>(h) << 16;
      std::memcpy(out + i, &bits, 4);
    }
  }
}

// Four f16 values (d of four blocks) as f32 lanes in the given order.
AVX2_FN inline __m256 HalvesToLanes(const uint8_t* b0, int64_t stride, int n, __m256i idx) {
  uint64_t packed = 0;
  for (int i = 0; i < n; ++i) packed |= static_cast<uint64_t>(quant::LoadU16(b0 + i * stride)) << (16 * i);
  const __m128 d = _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(packed)));
  return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(d), idx);
}

// Decoder interface:
//   kFamily, kUnit, Codes, kOffsetQ (code offset taken out after the dot:
//   4-bit codes are unsigned), kMlx (rows have S and C arrays: PrepRow),
//   kOffsetX (C = bias + kOffsetX * scale), Groups(), BlocksPerGroup(),
//   Load(row, u), W8(row, u, S), Prefetch(row, u), PrefetchParams(row).
struct MlxBase {
  static constexpr bool kMlx = true;
  const uint8_t* p;
  const uint8_t* scales;
  const uint8_t* biases;
  DType dtype;
  int64_t row_bytes, groups, param_bytes;
  int group_shift;  // log2(group size)
  MlxBase(const WeightMatrix& w, int bits)
      : p(static_cast<const uint8_t*>(w.data)), scales(static_cast<const uint8_t*>(w.scales)),
        biases(static_cast<const uint8_t*>(w.biases)), dtype(w.scale_dtype), row_bytes(w.cols * bits / 8),
        groups(w.cols / w.group_size), param_bytes(w.scale_dtype == DType::kF32 ? 4 : 2),
        group_shift(w.group_size == 32 ? 5 : w.group_size == 64 ? 6 : 7) {}
  int64_t Groups() const { return groups; }
  int64_t BlocksPerGroup() const { return int64_t{1} << (group_shift - 5); }
  // S[g] = scale, C[g] = bias + offset * scale (f32; the product rounded
  // before the add); g < groups.
  AVX2_FN void PrepRowMlx(int64_t row, float offset, float* s, float* c) const {
    ParamsToF32(scales + row * groups * param_bytes, dtype, groups, s);
    ParamsToF32(biases + row * groups * param_bytes, dtype, groups, c);
    const __m256 o = _mm256_set1_ps(offset);
    int64_t g = 0;
    for (; g + 8 <= groups; g += 8) {
      const __m256 m = avx2::Pin(_mm256_mul_ps(o, _mm256_loadu_ps(s + g)));
      _mm256_storeu_ps(c + g, _mm256_add_ps(_mm256_loadu_ps(c + g), m));
    }
    for (; g < groups; ++g) c[g] += quant::Rounded(offset * s[g]);
  }
  void PrefetchParams(int64_t row) const {
    const int64_t at = row * groups * param_bytes, bytes = groups * param_bytes;
    for (int64_t line = at & ~int64_t{63}; line < at + bytes; line += 64) {
      avx2::PrefetchAt(scales, line);
      avx2::PrefetchAt(biases, line);
    }
  }
  // Lane l's scale: S[(u * unit + 32 * Block(l)) >> group_shift].
  AVX2_FN __m256 MlxW8(const float* s, int64_t u, int unit, __m256i block_of_lane) const {
    const int64_t first = (u * unit) >> group_shift;
    const __m256i idx = _mm256_srli_epi32(_mm256_slli_epi32(block_of_lane, 5), group_shift);
    return _mm256_permutevar8x32_ps(_mm256_loadu_ps(s + first), idx);
  }
};

struct UnitMlx4 : MlxBase {
  static constexpr Family kFamily = Family::kNibbles;
  static constexpr int kUnit = 128, kOffsetQ = 8, kOffsetX = 8;
  using Codes = Nibbles;
  explicit UnitMlx4(const WeightMatrix& w) : MlxBase(w, 4) {}
  AVX2_FN void PrepRow(int64_t row, float* s, float* c) const { PrepRowMlx(row, kOffsetX, s, c); }
  AVX2_FN Codes Load(int64_t row, int64_t u) const {
    const __m256i* q = reinterpret_cast<const __m256i*>(p + row * row_bytes + 64 * u);
    return SplitNibbles(_mm256_loadu_si256(q), _mm256_loadu_si256(q + 1));
  }
  AVX2_FN __m256 W8(int64_t, int64_t u, const float* s) const {
    return MlxW8(s, u, kUnit, _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3));
  }
  void Prefetch(int64_t row, int64_t u) const { avx2::PrefetchAt(p, row * row_bytes + 64 * u); }
};

struct UnitMlx8 : MlxBase {
  static constexpr Family kFamily = Family::kWide;
  static constexpr int kUnit = 64, kOffsetQ = 0, kOffsetX = 128;  // codes centred before the dot
  using Codes = Wide;
  explicit UnitMlx8(const WeightMatrix& w) : MlxBase(w, 8) {}
  AVX2_FN void PrepRow(int64_t row, float* s, float* c) const { PrepRowMlx(row, kOffsetX, s, c); }
  AVX2_FN Codes Load(int64_t row, int64_t u) const {
    const __m256i* q = reinterpret_cast<const __m256i*>(p + row * row_bytes + 64 * u);
    const __m256i flip = _mm256_set1_epi8(-128);
    return Widen(_mm256_xor_si256(_mm256_loadu_si256(q), flip), _mm256_xor_si256(_mm256_loadu_si256(q + 1), flip));
  }
  AVX2_FN __m256 W8(int64_t, int64_t u, const float* s) const {
    return MlxW8(s, u, kUnit, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
  }
  void Prefetch(int64_t row, int64_t u) const { avx2::PrefetchAt(p, row * row_bytes + 64 * u); }
};

// ggml blocks of 32 values (scale d in the block: no per-row arrays).
template <int kBytes>
struct GgmlUnitBase {
  static constexpr bool kMlx = false;
  static constexpr int kOffsetX = 0;
  const uint8_t* p;
  int64_t row_bytes, blocks;
  explicit GgmlUnitBase(const WeightMatrix& w)
      : p(static_cast<const uint8_t*>(w.data)), row_bytes(w.cols / 32 * kBytes), blocks(w.cols / 32) {}
  int64_t Groups() const { return blocks; }
  int64_t BlocksPerGroup() const { return 1; }
  void PrepRow(int64_t, float*, float*) const {}
  void PrefetchParams(int64_t) const {}
  const uint8_t* Block(int64_t row, int64_t b) const { return p + row * row_bytes + b * kBytes; }
};

struct UnitQ4_0 : GgmlUnitBase<18> {
  static constexpr Family kFamily = Family::kNibbles;
  static constexpr int kUnit = 128, kOffsetQ = 8;  // w = d * (q - 8)
  using Codes = Nibbles;
  using GgmlUnitBase::GgmlUnitBase;
  AVX2_FN Codes Load(int64_t row, int64_t u) const {
    const uint8_t* b = Block(row, 4 * u);
    const __m256i va = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(b + 20),
                                           reinterpret_cast<const __m128i*>(b + 2));
    const __m256i vb = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(b + 56),
                                           reinterpret_cast<const __m128i*>(b + 38));
    return SplitNibbles(va, vb);
  }
  AVX2_FN __m256 W8(int64_t row, int64_t u, const float*) const {
    return HalvesToLanes(Block(row, 4 * u), 18, 4, _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3));
  }
  void Prefetch(int64_t row, int64_t u) const {
    const int64_t at = row * row_bytes + 72 * u;
    avx2::PrefetchAt(p, at);
    avx2::PrefetchAt(p, at + 71);
  }
};

// Calls fn(decoder) for the formats these kernels take; false for others.
template <typename Fn>
bool WithUnitDecoder(const WeightMatrix& w, Fn&& fn) {
  if (w.cols % 128 != 0) return false;
  if (w.format == WeightFormat::kMlxAffine) {
    if (w.group_size != 32 && w.group_size != 64 && w.group_size != 128) return false;
    if (w.bits == 4) {
      fn(UnitMlx4(w));
      return true;
    }
    if (w.bits == 8) {
      fn(UnitMlx8(w));
      return true;
    }
    return false;
  }
  if (w.format != WeightFormat::kGgml) return false;
  if (w.ggml_type == GgmlType::kQ4_0) {
    fn(UnitQ4_0(w));
    return true;
  }
  return false;
}

}  // namespace llmhost::cpu::int8u

#endif  // __x86_64__
