// AVX2 integer-code decoders for the 8-bit-activation path (matmul_int8_avx2.cpp).
//
// Every 32-weight block b of a quantized row is written as
//   w_i = a_i * (q_i - o) + c'      (i = 0..31)
// with q_i small integer codes (one byte each, value i at byte i; MLX 4-bit:
// even values then odd values, the activations permuted to match), o a
// per-format offset that centres unsigned codes (0 for signed codes), a the
// block's scale (one value, or Q6_K's two 16-value halves as lanes 0-3 / 4-7
// of the madd lane layout) and c' a per-block constant:
//   Q4_0  q = nibble,  o = 8,  a = d,       c' = 0
//   Q4_1  q = nibble,  o = 8,  a = d,       c' = m + 8d
//   Q5_0  q = 5 bits,  o = 16, a = d,       c' = 0
//   Q5_1  q = 5 bits,  o = 16, a = d,       c' = m + 16d
//   Q8_0  q signed,    o = 0,  a = d,       c' = 0
//   Q4_K  q = nibble,  o = 8,  a = d*sc_j,  c' = 8a - dmin*m_j
//   Q5_K  q = 5 bits,  o = 16, a = d*sc_j,  c' = 16a - dmin*m_j
//   Q6_K  q = 6 bits,  o = 32, a = d*sc (per 16), c' = 0
//   Q8_K  q signed,    o = 0,  a = d,       c' = 0
//   MLX b <= 6: q = code, o = 2^(b-1), a = scale, c' = bias + o*scale
//   MLX 8: q = code - 128 (signed), o = 0, a = scale, c' = bias + 128*scale
// Centring (o) halves the integer magnitudes that meet the quantized
// activations, and so the error of quantizing them.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/quant_avx2_decode.h"

namespace llmhost::cpu::int8 {

using avx2::HalfAt;

struct Block {
  __m256i q;   // 32 codes (bytes): unsigned, or signed when the decoder's kSigned
  __m256 a;    // scale per madd lane (lane m covers values 4m..4m+3)
  float c;     // c' (0 when the format has none)
};

// 32 nibbles of a Q4/Q5 block in natural order: [low nibbles | high nibbles].
AVX2_FN inline __m256i NibblesNatural(const uint8_t* qs) {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i both = _mm256_blend_epi32(v, _mm256_srli_epi16(v, 4), 0xF0);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Bit i of a 32-bit word as bit 4 of byte i.
AVX2_FN inline __m256i BitsToBytes16(uint32_t bits) {
  const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2,
                                        2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), shuf);
  const __m256i mask = _mm256_set1_epi64x(0x8040201008040201LL);
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, mask), mask);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Decoder interface: a header (the scales shared by SubBlocks() consecutive
// 32-blocks: one ggml block, a K-quant super-block, an MLX group) is read once
// by Prepare(row, k) (k a multiple of 32 * SubBlocks()); Codes(h, j) gives the
// j-th 32-block under it.
template <int kBlock, int kBytes>
struct CodeDecBase {
  static constexpr bool kEvenOdd = false;  // codes in natural order
  static constexpr bool kSigned = false;
  static constexpr bool kHasC = false;  // c' is always 0
  static constexpr int kSub = kBlock / 32;
  const uint8_t* p;
  int64_t row_bytes;
  explicit CodeDecBase(const WeightMatrix& w)
      : p(static_cast<const uint8_t*>(w.data)), row_bytes(w.cols / kBlock * kBytes) {}
  int64_t SubBlocks() const { return kSub; }
  const uint8_t* BlockAt(int64_t row, int64_t k) const { return p + row * row_bytes + (k / kBlock) * kBytes; }
  // The block holding (row, k): one hint per block for small blocks (each
  // line is hinted by the blocks in it), every line for K-quant blocks.
  void Prefetch(int64_t row, int64_t k) const {
    const int64_t at = row * row_bytes + (k / kBlock) * kBytes;
    if constexpr (kBytes <= 64) {
      avx2::PrefetchAt(p, at);
    } else {
      for (int64_t line = at & ~int64_t{63}; line < at + kBytes; line += 64) avx2::PrefetchAt(p, line);
    }
  }
};

// One 32-value ggml block: the header is the block itself and its scale(s).
struct SmallHeader {
  const uint8_t* b;
  float d, c;
};

struct CodeQ4_0 : CodeDecBase<32, 18> {
  static constexpr int kOffset = 8;
  using CodeDecBase::CodeDecBase;
  using Header = SmallHeader;
  AVX2_FN Header Prepare(int64_t row, int64_t k) const {
    const uint8_t* b = BlockAt(row, k);
    return {b, HalfAt(b), 0.0f};
  }
  AVX2_FN Block Codes(const Header& h, int) const { return {NibblesNatural(h.b + 2), _mm256_set1_ps(h.d), 0.0f}; }
};

struct CodeQ4_1 : CodeDecBase<32, 20> {
  static constexpr bool kHasC = true;
  static constexpr int kOffset = 8;
  using CodeDecBase::CodeDecBase;
  using Header = SmallHeader;
  AVX2_FN Header Prepare(int64_t row, int64_t k) const {
    const uint8_t* b = BlockAt(row, k);
    const float d = HalfAt(b);
    return {b, d, HalfAt(b + 2) + 8.0f * d};
  }
  AVX2_FN Block Codes(const Header& h, int) const { return {NibblesNatural(h.b + 4), _mm256_set1_ps(h.d), h.c}; }
};

struct CodeQ5_0 : CodeDecBase<32, 22> {
  static constexpr int kOffset = 16;
  using CodeDecBase::CodeDecBase;
  using Header = SmallHeader;
  AVX2_FN Header Prepare(int64_t row, int64_t k) const {
    const uint8_t* b = BlockAt(row, k);
    return {b, HalfAt(b), 0.0f};
  }
  AVX2_FN Block Codes(const Header& h, int) const {
    const __m256i q = _mm256_or_si256(NibblesNatural(h.b + 6), BitsToBytes16(quant::LoadU32(h.b + 2)));
    return {q, _mm256_set1_ps(h.d), 0.0f};
  }
};

struct CodeQ5_1 : CodeDecBase<32, 24> {
  static constexpr bool kHasC = true;
  static constexpr int kOffset = 16;
  using CodeDecBase::CodeDecBase;
  using Header = SmallHeader;
  AVX2_FN Header Prepare(int64_t row, int64_t k) const {
    const uint8_t* b = BlockAt(row, k);
    const float d = HalfAt(b);
    return {b, d, HalfAt(b + 2) + 16.0f * d};
  }
  AVX2_FN Block Codes(const Header& h, int) const {
    const __m256i q = _mm256_or_si256(NibblesNatural(h.b + 8), BitsToBytes16(quant::LoadU32(h.b + 4)));
    return {q, _mm256_set1_ps(h.d), h.c};
  }
};

struct CodeQ8_0 : CodeDecBase<32, 34> {
  static constexpr bool kSigned = true;
  static constexpr int kOffset = 0;
  using CodeDecBase::CodeDecBase;
  using Header = SmallHeader;
  AVX2_FN Header Prepare(int64_t row, int64_t k) const {
    const uint8_t* b = BlockAt(row, k);
    return {b, HalfAt(b), 0.0f};
  }
  AVX2_FN Block Codes(const Header& h, int) const {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h.b + 2)), _mm256_set1_ps(h.d), 0.0f};
  }
};

// A K-quant super-block: 8 sub-blocks' scales (a) and constants (c').
struct SuperHeader {
  const uint8_t* b;
  float a[8], c[8];
};

template <bool kFive>
struct CodeQK45 : CodeDecBase<256, kFive ? 176 : 144> {
  static constexpr bool kHasC = true;
  static constexpr int kOffset = kFive ? 16 : 8;
  using CodeDecBase<256, kFive ? 176 : 144>::CodeDecBase;
  using Header = SuperHeader;
  AVX2_FN Header Prepare(int64_t row, int64_t k) const {
    Header h;
    h.b = this->BlockAt(row, k);
    // The 12 packed bytes as 3 words, rearranged so that bytes 0..7 are the
    // 8 scales and bytes 8..15 the 8 mins (the GetScaleMinK4 layout, all at
    // once: j < 4 in the low 6 bits of bytes j / j+4; j >= 4 split between a
    // nibble of byte j+4 and the top 2 bits of bytes j-4 / j).
    uint32_t u[4];
    std::memcpy(u, h.b + 4, 12);
    constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
    u[3] = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);
    const uint32_t mins_lo = u[1] & kLow6;
    u[1] = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);
    u[2] = mins_lo;
    u[0] &= kLow6;
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
    const __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
    const __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)));
    const __m256 a = _mm256_mul_ps(_mm256_set1_ps(HalfAt(h.b)), sc);
    const __m256 m = _mm256_mul_ps(_mm256_set1_ps(HalfAt(h.b + 2)), mn);
    _mm256_storeu_ps(h.a, a);
    _mm256_storeu_ps(h.c, _mm256_sub_ps(avx2::Pin(_mm256_mul_ps(_mm256_set1_ps(static_cast<float>(kOffset)), a)), m));
    return h;
  }
  AVX2_FN Block Codes(const Header& h, int j) const {
    const uint8_t* qs = h.b + (kFive ? 48 : 16) + 32 * (j / 2);
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
    __m256i q = _mm256_and_si256(_mm256_srli_epi16(raw, 4 * (j & 1)), _mm256_set1_epi8(0x0F));
    if constexpr (kFive) {
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h.b + 16));
      const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(qh, j), _mm256_set1_epi8(0x01));
      q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
    }
    return {q, _mm256_set1_ps(h.a[j]), h.c[j]};
  }
};

struct Q6Header {
  const uint8_t* b;
  __m256 a[8];  // per sub-block: d * scale, lanes 0-3 / 4-7 for its two halves
};

struct CodeQ6_K : CodeDecBase<256, 210> {
  static constexpr int kOffset = 32;
  using CodeDecBase::CodeDecBase;
  using Header = Q6Header;
  AVX2_FN Header Prepare(int64_t row, int64_t k) const {
    Header h;
    h.b = BlockAt(row, k);
    const __m256 d = _mm256_set1_ps(HalfAt(h.b + 208));
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h.b + 192));
    const __m256 half[2] = {_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))),
                            _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))))};
    // Sub-block j = 4 * half + quarter i uses scales 2i (values 0..15) and 2i + 1.
    for (int j = 0; j < 8; ++j) {
      const int i = j % 4;
      const __m256i idx = _mm256_setr_epi32(2 * i, 2 * i, 2 * i, 2 * i, 2 * i + 1, 2 * i + 1, 2 * i + 1, 2 * i + 1);
      h.a[j] = _mm256_permutevar8x32_ps(half[j / 4], idx);
    }
    return h;
  }
  AVX2_FN Block Codes(const Header& hd, int j) const {
    const int h = j / 4, i = j % 4;
    const uint8_t* ql = hd.b + 64 * h + 32 * (i & 1);
    const uint8_t* qh = hd.b + 128 + 32 * h;
    const __m256i low = _mm256_and_si256(
        _mm256_srli_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql)), i >= 2 ? 4 : 0),
        _mm256_set1_epi8(0x0F));
    const __m256i high = _mm256_and_si256(
        _mm256_srli_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)), 2 * i), _mm256_set1_epi8(0x03));
    return {_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), hd.a[j], 0.0f};
  }
};

struct CodeQ8_K : CodeDecBase<256, 292> {
  static constexpr bool kSigned = true;
  static constexpr int kOffset = 0;
  using CodeDecBase::CodeDecBase;
  using Header = SmallHeader;
  AVX2_FN Header Prepare(int64_t row, int64_t k) const {
    const uint8_t* b = BlockAt(row, k);
    return {b, quant::LoadF32(b), 0.0f};
  }
  AVX2_FN Block Codes(const Header& h, int j) const {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h.b + 4 + 32 * j)), _mm256_set1_ps(h.d), 0.0f};
  }
};

// An MLX group: its scale, bias and codes.
struct MlxHeader {
  const uint8_t* q;
  float scale, c;
};

template <int kBits>
struct CodeMlx {
  // 4-bit codes come in MLX's byte order, [even values | odd values] (the
  // activations are stored in that order too); the others in natural order.
  static constexpr bool kEvenOdd = kBits == 4;
  static constexpr bool kSigned = kBits == 8;
  static constexpr bool kHasC = true;
  static constexpr int kOffset = kBits == 8 ? 0 : 1 << (kBits - 1);
  using Header = MlxHeader;
  const uint8_t* p;
  const uint8_t* scales;
  const uint8_t* biases;
  DType dtype;
  int64_t row_bytes, groups, param_bytes;
  int group_size, group_shift;
  explicit CodeMlx(const WeightMatrix& w)
      : p(static_cast<const uint8_t*>(w.data)), scales(static_cast<const uint8_t*>(w.scales)),
        biases(static_cast<const uint8_t*>(w.biases)), dtype(w.scale_dtype), row_bytes(w.cols * kBits / 8),
        groups(w.cols / w.group_size), param_bytes(w.scale_dtype == DType::kF32 ? 4 : 2),
        group_size(w.group_size), group_shift(w.group_size == 32 ? 5 : w.group_size == 64 ? 6 : 7) {}
  int64_t SubBlocks() const { return group_size / 32; }
  void Prefetch(int64_t row, int64_t k) const {
    const int64_t at = row * row_bytes + k * kBits / 8, bytes = group_size * kBits / 8;
    avx2::PrefetchAt(p, at);
    for (int64_t line = (at & ~int64_t{63}) + 64; line < at + bytes; line += 64) avx2::PrefetchAt(p, line);
    const int64_t g = (row * groups + (k >> group_shift)) * param_bytes;
    avx2::PrefetchAt(scales, g);
    avx2::PrefetchAt(biases, g);
  }
  AVX2_FN float Param(const uint8_t* params, int64_t g) const {
    switch (dtype) {
      case DType::kF32: return quant::LoadF32(params + 4 * g);
      case DType::kF16: return _cvtsh_ss(quant::LoadU16(params + 2 * g));
      default: {
        const uint32_t bits = static_cast<uint32_t>(quant::LoadU16(params + 2 * g)) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
      }
    }
  }
  AVX2_FN Header Prepare(int64_t row, int64_t k) const {
    const int64_t g = row * groups + (k >> group_shift);
    const float scale = Param(scales, g), bias = Param(biases, g);
    const float c = kBits == 8 ? bias + 128.0f * scale : bias + static_cast<float>(kOffset) * scale;
    return {p + row * row_bytes + k * kBits / 8, scale, c};
  }
  AVX2_FN Block Codes(const Header& h, int j) const {
    const uint8_t* q = h.q + j * 4 * kBits;  // 32 codes = 4 * kBits bytes
    __m256i codes;
    if constexpr (kBits == 8) {
      codes = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)), _mm256_set1_epi8(-128));
    } else if constexpr (kBits == 4) {
      codes = NibblesNatural(q);  // low nibbles (values 0, 2, ..) | high nibbles (1, 3, ..)
    } else {
      // Four groups of 8 codes as int32 lanes, packed to bytes in order.
      const __m256i c0 = avx2::MlxCodes8<kBits>(q), c1 = avx2::MlxCodes8<kBits>(q + kBits),
                    c2 = avx2::MlxCodes8<kBits>(q + 2 * kBits), c3 = avx2::MlxCodes8<kBits>(q + 3 * kBits);
      const __m256i w01 = _mm256_packus_epi32(c0, c1), w23 = _mm256_packus_epi32(c2, c3);  // per-lane interleave
      const __m256i b = _mm256_packus_epi16(w01, w23);
      codes = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    }
    return {codes, _mm256_set1_ps(h.scale), h.c};
  }
};

// Calls fn(decoder) with the code decoder of w's format; returns false when
// the format has no integer codes (plain floats).
template <typename Fn>
bool WithCodeDecoder(const WeightMatrix& w, Fn&& fn) {
  if (w.format == WeightFormat::kMlxAffine) {
    switch (w.bits) {
      case 2: fn(CodeMlx<2>(w)); return true;
      case 3: fn(CodeMlx<3>(w)); return true;
      case 4: fn(CodeMlx<4>(w)); return true;
      case 5: fn(CodeMlx<5>(w)); return true;
      case 6: fn(CodeMlx<6>(w)); return true;
      case 8: fn(CodeMlx<8>(w)); return true;
      default: return false;
    }
  }
  if (w.format != WeightFormat::kGgml) return false;
  switch (w.ggml_type) {
    case GgmlType::kQ4_0: fn(CodeQ4_0(w)); return true;
    case GgmlType::kQ4_1: fn(CodeQ4_1(w)); return true;
    case GgmlType::kQ5_0: fn(CodeQ5_0(w)); return true;
    case GgmlType::kQ5_1: fn(CodeQ5_1(w)); return true;
    case GgmlType::kQ8_0: fn(CodeQ8_0(w)); return true;
    case GgmlType::kQ4_K: fn(CodeQK45<false>(w)); return true;
    case GgmlType::kQ5_K: fn(CodeQK45<true>(w)); return true;
    case GgmlType::kQ6_K: fn(CodeQ6_K(w)); return true;
    case GgmlType::kQ8_K: fn(CodeQ8_K(w)); return true;
    default: return false;
  }
}

}  // namespace llmhost::cpu::int8

#endif  // __x86_64__
