// AVX2 weight decoders, one per stored format, shared by the dequantizer
// (quant_avx2.cpp) and the matmul kernels (matmul_avx2.cpp). Include only
// from files built for baseline x86-64 whose AVX2 code carries AVX2_FN.
//
// A decoder is built from a checked WeightMatrix and yields kStep (8 or 32)
// consecutive weights of one row as f32 vectors: Load(row, k, v) with k a
// multiple of kStep. Plain formats (kStep 8) also have LoadTail for the last
// cols % 8 columns (zero-padded). Values are exactly those of the scalar
// decoders in quant_ggml.cpp / quant_mlx.cpp / quant_float.cpp: the same f32
// operations in the same order (int -> f32 conversions are exact; products
// that feed an add are pinned with a register barrier so that the compiler
// cannot fuse them into an FMA).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul.h"
#include "backend/cpu/quant_formats.h"
#include "backend/weight_matrix.h"

#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

namespace llmhost::cpu::avx2 {

AVX2_FN inline float HalfAt(const uint8_t* p) { return _cvtsh_ss(quant::LoadU16(p)); }
AVX2_FN inline __m128i Load8Bytes(const uint8_t* p) {
  return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
}
AVX2_FN inline __m256 I8ToPs(__m128i b) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)); }
AVX2_FN inline __m256 U8ToPs(__m128i b) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)); }
// Rounds the product before a following add (no contraction into an FMA).
AVX2_FN inline __m256 Pin(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}
// The 16 bytes of a 128-bit vector as 2 x 8 int32 lanes -> f32.
AVX2_FN inline void U8x16ToPs(__m128i b, __m256* lo, __m256* hi) {
  *lo = U8ToPs(b);
  *hi = U8ToPs(_mm_srli_si128(b, 8));
}

// Prefetch hint for `base + offset` (never faults; no pointer arithmetic
// past the object in C++ terms).
inline void PrefetchAt(const void* base, int64_t offset) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(base) + offset), _MM_HINT_T0);
}

// --- plain floats -------------------------------------------------------------

struct DecF32 {
  static constexpr int kStep = 8;
  static constexpr bool kPlain = true;
  const float* p;
  int64_t cols;
  explicit DecF32(const WeightMatrix& w) : p(static_cast<const float*>(w.data)), cols(w.cols) {}
  void Prefetch(int64_t row, int64_t k) const { PrefetchAt(p, 4 * (row * cols + k)); }
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const { v[0] = _mm256_loadu_ps(p + row * cols + k); }
  AVX2_FN void LoadTail(int64_t row, int64_t k, int64_t rem, __m256* v) const {
    alignas(32) float t[8] = {};
    for (int64_t i = 0; i < rem; ++i) t[i] = p[row * cols + k + i];
    v[0] = _mm256_load_ps(t);
  }
};

struct DecBf16 {
  static constexpr int kStep = 8;
  static constexpr bool kPlain = true;
  const uint16_t* p;
  int64_t cols;
  explicit DecBf16(const WeightMatrix& w) : p(static_cast<const uint16_t*>(w.data)), cols(w.cols) {}
  void Prefetch(int64_t row, int64_t k) const { PrefetchAt(p, 2 * (row * cols + k)); }
  AVX2_FN static __m256 Convert(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    v[0] = Convert(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + row * cols + k)));
  }
  AVX2_FN void LoadTail(int64_t row, int64_t k, int64_t rem, __m256* v) const {
    alignas(16) uint16_t t[8] = {};
    for (int64_t i = 0; i < rem; ++i) t[i] = p[row * cols + k + i];
    v[0] = Convert(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
  }
};

struct DecF16 {
  static constexpr int kStep = 8;
  static constexpr bool kPlain = true;
  const uint16_t* p;
  int64_t cols;
  explicit DecF16(const WeightMatrix& w) : p(static_cast<const uint16_t*>(w.data)), cols(w.cols) {}
  void Prefetch(int64_t row, int64_t k) const { PrefetchAt(p, 2 * (row * cols + k)); }
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    v[0] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + row * cols + k)));
  }
  AVX2_FN void LoadTail(int64_t row, int64_t k, int64_t rem, __m256* v) const {
    alignas(16) uint16_t t[8] = {};
    for (int64_t i = 0; i < rem; ++i) t[i] = p[row * cols + k + i];
    v[0] = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
  }
};

// --- MLX affine ---------------------------------------------------------------

// pshufb control: 32-bit lane i (of 8) gets bytes b, b+1 of the group of 8
// values (b = the byte holding value i's first bit), zero above.
constexpr std::array<int8_t, 32> MlxWindowShuffle(int bits) {
  std::array<int8_t, 32> t{};
  for (int i = 0; i < 8; ++i) {
    const int byte = (i * bits) / 8, at = 16 * (i / 4) + 4 * (i % 4);
    t[at] = static_cast<int8_t>(byte);
    t[at + 1] = static_cast<int8_t>(byte + 1);
    t[at + 2] = t[at + 3] = -128;  // high bit set: zero
  }
  return t;
}

// 8 consecutive codes starting at a byte boundary, as int32 lanes.
template <int kBits>
AVX2_FN inline __m256i MlxCodes8(const uint8_t* p) {
  if constexpr (kBits == 8) {
    return _mm256_cvtepu8_epi32(Load8Bytes(p));
  } else if constexpr (kBits == 4) {
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    return _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(quant::LoadU32(p))), shifts),
        _mm256_set1_epi32(0xF));
  } else if constexpr (kBits == 2) {
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(quant::LoadU16(p)), shifts),
                            _mm256_set1_epi32(0x3));
  } else {
    // 3, 5, 6 bits: the 8 codes span kBits bytes; lane i takes the 16-bit
    // window at byte (i*kBits)/8 and shifts it right by (i*kBits)%8.
    uint64_t u = 0;
    std::memcpy(&u, p, kBits);
    static constexpr std::array<int8_t, 32> kCtl = MlxWindowShuffle(kBits);
    const __m256i ctl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kCtl.data()));
    const __m256i shifts = _mm256_setr_epi32(0, kBits % 8, (2 * kBits) % 8, (3 * kBits) % 8,
                                             (4 * kBits) % 8, (5 * kBits) % 8, (6 * kBits) % 8,
                                             (7 * kBits) % 8);
    const __m256i win = _mm256_shuffle_epi8(_mm256_set1_epi64x(static_cast<long long>(u)), ctl);
    return _mm256_and_si256(_mm256_srlv_epi32(win, shifts), _mm256_set1_epi32((1 << kBits) - 1));
  }
}

// w = scale * q + bias, rounded after the multiply and after the add. With
// BF16 or F16 scales the product has at most 8 + 11 significant bits and is
// exact in f32, so a single FMA rounds once to the same value (unless
// scale * q overflows f32, which no real scale does); F32 scales keep the
// separate multiply. kParams fixes the scale dtype at compile time (4 and 8
// bits, the common widths: no per-block dispatch); kAnyParams reads it from
// the matrix.
enum MlxParams { kAnyParams, kBf16Params, kF16Params, kF32Params };

template <int kBits, int kParams = kAnyParams>
struct DecMlx {
  static constexpr int kStep = 32;
  static constexpr bool kPlain = false;
  const uint8_t* p;
  const uint8_t* scales;
  const uint8_t* biases;
  DType dtype;
  int64_t row_bytes, groups;
  int group_shift;  // log2(group_size)
  explicit DecMlx(const WeightMatrix& m)
      : p(static_cast<const uint8_t*>(m.data)), scales(static_cast<const uint8_t*>(m.scales)),
        biases(static_cast<const uint8_t*>(m.biases)), dtype(m.scale_dtype), row_bytes(m.cols * kBits / 8),
        groups(m.cols / m.group_size), group_shift(m.group_size == 32 ? 5 : m.group_size == 64 ? 6 : 7) {}
  DType Dt() const {
    if constexpr (kParams == kBf16Params) return DType::kBF16;
    if constexpr (kParams == kF16Params) return DType::kF16;
    if constexpr (kParams == kF32Params) return DType::kF32;
    return dtype;
  }
  // The codes at (row, k) and the scale and bias of their group (every call:
  // thinning the hints to one per line measured slower).
  void Prefetch(int64_t row, int64_t k) const {
    PrefetchAt(p, row * row_bytes + k * kBits / 8);
    const int64_t g = (row * groups + (k >> group_shift)) * (Dt() == DType::kF32 ? 4 : 2);
    PrefetchAt(scales, g);
    PrefetchAt(biases, g);
  }
  // Scale or bias g in every lane (16-bit values: broadcast, then widen).
  AVX2_FN __m256 ParamVec(const uint8_t* params, int64_t g) const {
    const DType dt = Dt();
    if (dt == DType::kF32) return _mm256_set1_ps(quant::LoadF32(params + 4 * g));  // may be unaligned
    const __m128i h = _mm_set1_epi16(static_cast<short>(quant::LoadU16(params + 2 * g)));
    if (dt == DType::kF16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_broadcastsi128_si256(h), 16));
  }
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const int64_t g = row * groups + (k >> group_shift);
    const __m256 scale = ParamVec(scales, g);
    const __m256 bias = ParamVec(biases, g);
    const uint8_t* q = p + row * row_bytes + k * kBits / 8;
    if (Dt() != DType::kF32) {
      for (int j = 0; j < 4; ++j) {
        v[j] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(MlxCodes8<kBits>(q + j * kBits)), bias);
      }
    } else {
      for (int j = 0; j < 4; ++j) {
        const __m256 c = _mm256_cvtepi32_ps(MlxCodes8<kBits>(q + j * kBits));
        v[j] = _mm256_add_ps(Pin(_mm256_mul_ps(scale, c)), bias);
      }
    }
  }
};

// DecMlx<kBits> with the scale dtype as a template argument.
template <int kBits, typename Fn>
auto WithMlxParams(const WeightMatrix& w, Fn&& fn) {
  switch (w.scale_dtype) {
    case DType::kF16: return fn(DecMlx<kBits, kF16Params>(w));
    case DType::kF32: return fn(DecMlx<kBits, kF32Params>(w));
    default: return fn(DecMlx<kBits, kBf16Params>(w));
  }
}

// --- FP8 e4m3 -----------------------------------------------------------------

// w = scale * e4m3(code). A code's magnitude bits shifted left 7 are the f16
// of its value / 256 (exponent bias 15 for 7; subnormals land on f16
// subnormals the same way), so F16C widens 8 codes exactly and the 256 joins
// the scale (a power of two: the product is the same f32). NaN codes (0x7F,
// 0xFF) become NaN, as Fp8E4M3ToF32 and the scalar path give.
struct DecFp8 {
  static constexpr int kStep = 32;
  static constexpr bool kPlain = false;
  const uint8_t* p;
  const float* scales;
  int64_t cols, groups, group_size;
  explicit DecFp8(const WeightMatrix& w)
      : p(static_cast<const uint8_t*>(w.data)), scales(static_cast<const float*>(w.scales)), cols(w.cols),
        groups(w.cols / w.group_size), group_size(w.group_size) {}
  void Prefetch(int64_t row, int64_t k) const { PrefetchAt(p, row * cols + k); }
  // The 8 codes' values / 256.
  AVX2_FN static __m256 Widen(__m128i bytes) {
    const __m128i b = _mm_cvtepu8_epi16(bytes);
    const __m128i mag = _mm_and_si128(b, _mm_set1_epi16(0x7F));
    const __m128i half = _mm_or_si128(_mm_slli_epi16(mag, 7), _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8));
    const __m256 v = _mm256_cvtph_ps(half);
    const __m128i nan16 = _mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7F));
    const __m256 nan = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(nan16));
    return _mm256_blendv_ps(v, _mm256_set1_ps(__builtin_nanf("")), nan);
  }
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const __m256 scale = _mm256_set1_ps(scales[row * groups + k / group_size] * 256.0f);
    const uint8_t* q = p + row * cols + k;
    for (int j = 0; j < 4; ++j) v[j] = _mm256_mul_ps(scale, Widen(Load8Bytes(q + 8 * j)));
  }
};

// --- ggml blocks --------------------------------------------------------------

// The 32 values of a Q4/Q5 block's nibbles: values 0..15 low, 16..31 high.
AVX2_FN inline void Nibbles32(const uint8_t* qs, __m256i* q) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(v, m), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
  q[0] = _mm256_cvtepu8_epi32(lo);
  q[1] = _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8));
  q[2] = _mm256_cvtepu8_epi32(hi);
  q[3] = _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8));
}

// Bit 4 of values 8j..8j+7 from a Q5 qh word, for j = 0..3.
AVX2_FN inline void Q5High(uint32_t qh, __m256i* h) {
  const __m256i base = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i word = _mm256_set1_epi32(static_cast<int>(qh)), one = _mm256_set1_epi32(1);
  for (int j = 0; j < 4; ++j) {
    const __m256i idx = _mm256_add_epi32(base, _mm256_set1_epi32(8 * j));
    h[j] = _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(word, idx), one), 4);
  }
}

template <int kBlock, int kBytes>
struct GgmlDec {
  static constexpr int kStep = 32;
  static constexpr bool kPlain = false;
  const uint8_t* p;
  int64_t row_bytes;
  explicit GgmlDec(const WeightMatrix& w)
      : p(static_cast<const uint8_t*>(w.data)), row_bytes(w.cols / kBlock * kBytes) {}
  const uint8_t* Block(int64_t row, int64_t k) const { return p + row * row_bytes + (k / kBlock) * kBytes; }
  void Prefetch(int64_t row, int64_t k) const { PrefetchAt(p, row * row_bytes + (k / kBlock) * kBytes); }
};

struct DecQ8_0 : GgmlDec<32, 34> {
  using GgmlDec::GgmlDec;
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const uint8_t* b = Block(row, k);
    const __m256 d = _mm256_set1_ps(HalfAt(b));
    for (int j = 0; j < 4; ++j) v[j] = _mm256_mul_ps(I8ToPs(Load8Bytes(b + 2 + 8 * j)), d);
  }
};

struct DecQ4_0 : GgmlDec<32, 18> {
  using GgmlDec::GgmlDec;
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const uint8_t* b = Block(row, k);
    const __m256 d = _mm256_set1_ps(HalfAt(b));
    __m256i q[4];
    Nibbles32(b + 2, q);
    const __m256i eight = _mm256_set1_epi32(8);
    for (int j = 0; j < 4; ++j) v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q[j], eight)), d);
  }
};

struct DecQ4_1 : GgmlDec<32, 20> {
  using GgmlDec::GgmlDec;
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const uint8_t* b = Block(row, k);
    const __m256 d = _mm256_set1_ps(HalfAt(b)), m = _mm256_set1_ps(HalfAt(b + 2));
    __m256i q[4];
    Nibbles32(b + 4, q);
    for (int j = 0; j < 4; ++j) v[j] = _mm256_add_ps(Pin(_mm256_mul_ps(_mm256_cvtepi32_ps(q[j]), d)), m);
  }
};

struct DecQ5_0 : GgmlDec<32, 22> {
  using GgmlDec::GgmlDec;
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const uint8_t* b = Block(row, k);
    const __m256 d = _mm256_set1_ps(HalfAt(b));
    __m256i q[4], h[4];
    Nibbles32(b + 6, q);
    Q5High(quant::LoadU32(b + 2), h);
    const __m256i sixteen = _mm256_set1_epi32(16);
    for (int j = 0; j < 4; ++j) {
      const __m256i c = _mm256_sub_epi32(_mm256_or_si256(q[j], h[j]), sixteen);
      v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(c), d);
    }
  }
};

struct DecQ5_1 : GgmlDec<32, 24> {
  using GgmlDec::GgmlDec;
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const uint8_t* b = Block(row, k);
    const __m256 d = _mm256_set1_ps(HalfAt(b)), m = _mm256_set1_ps(HalfAt(b + 2));
    __m256i q[4], h[4];
    Nibbles32(b + 8, q);
    Q5High(quant::LoadU32(b + 4), h);
    for (int j = 0; j < 4; ++j) {
      const __m256 c = _mm256_cvtepi32_ps(_mm256_or_si256(q[j], h[j]));
      v[j] = _mm256_add_ps(Pin(_mm256_mul_ps(c, d)), m);
    }
  }
};

// Q4_K and Q5_K: the 32 values of sub-block j = (k % 256) / 32.
template <bool kFive>
struct DecQK45 : GgmlDec<256, kFive ? 176 : 144> {
  using GgmlDec<256, kFive ? 176 : 144>::GgmlDec;
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const uint8_t* b = this->Block(row, k);
    const int j = static_cast<int>((k % 256) / 32);
    int sc, mn;
    quant::GetScaleMinK4(j, b + 4, &sc, &mn);
    const __m256 d1 = _mm256_set1_ps(HalfAt(b) * static_cast<float>(sc));
    const __m256 m1 = _mm256_set1_ps(HalfAt(b + 2) * static_cast<float>(mn));
    const uint8_t* qs = b + (kFive ? 48 : 16) + 32 * (j / 2);
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
    const __m256i nib = _mm256_and_si256(_mm256_srli_epi16(raw, 4 * (j & 1)), _mm256_set1_epi8(0x0F));
    const __m128i lo = _mm256_castsi256_si128(nib), hi = _mm256_extracti128_si256(nib, 1);
    __m256i q[4] = {_mm256_cvtepu8_epi32(lo), _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)),
                    _mm256_cvtepu8_epi32(hi), _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8))};
    if constexpr (kFive) {
      const uint8_t* qh = b + 16;
      const __m256i one = _mm256_set1_epi32(1);
      for (int i = 0; i < 4; ++i) {
        const __m256i h = _mm256_and_si256(_mm256_srli_epi32(_mm256_cvtepu8_epi32(Load8Bytes(qh + 8 * i)), j), one);
        q[i] = _mm256_add_epi32(q[i], _mm256_slli_epi32(h, 4));
      }
    }
    for (int i = 0; i < 4; ++i) v[i] = _mm256_sub_ps(Pin(_mm256_mul_ps(d1, _mm256_cvtepi32_ps(q[i]))), m1);
  }
};

// Q6_K: the 32 values of quarter i = (k % 128) / 32 of half h = (k % 256) / 128.
struct DecQ6_K : GgmlDec<256, 210> {
  using GgmlDec::GgmlDec;
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const uint8_t* b = Block(row, k);
    const int h = static_cast<int>((k % 256) / 128), i = static_cast<int>((k % 128) / 32);
    const uint8_t* ql = b + 64 * h + 32 * (i & 1);
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192) + 8 * h + 2 * i;
    const float d = HalfAt(b + 208);
    const __m256 s0 = _mm256_set1_ps(d * static_cast<float>(sc[0]));  // values 0..15
    const __m256 s1 = _mm256_set1_ps(d * static_cast<float>(sc[1]));  // values 16..31
    const __m256i low_raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(low_raw, i >= 2 ? 4 : 0), _mm256_set1_epi8(0x0F));
    const __m256i high_raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(high_raw, 2 * i), _mm256_set1_epi8(0x03));
    // 6-bit codes minus 32, as signed bytes.
    const __m256i codes = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), _mm256_set1_epi8(32));
    const __m128i c0 = _mm256_castsi256_si128(codes), c1 = _mm256_extracti128_si256(codes, 1);
    v[0] = _mm256_mul_ps(s0, I8ToPs(c0));
    v[1] = _mm256_mul_ps(s0, I8ToPs(_mm_srli_si128(c0, 8)));
    v[2] = _mm256_mul_ps(s1, I8ToPs(c1));
    v[3] = _mm256_mul_ps(s1, I8ToPs(_mm_srli_si128(c1, 8)));
  }
};

struct DecQ8_K : GgmlDec<256, 292> {
  using GgmlDec::GgmlDec;
  AVX2_FN void Load(int64_t row, int64_t k, __m256* v) const {
    const uint8_t* b = Block(row, k);
    const __m256 d = _mm256_set1_ps(quant::LoadF32(b));
    const uint8_t* qs = b + 4 + (k % 256);
    for (int j = 0; j < 4; ++j) v[j] = _mm256_mul_ps(d, I8ToPs(Load8Bytes(qs + 8 * j)));
  }
};

// Calls fn(decoder) with the decoder of w's format (w must be checked).
template <typename Fn>
auto WithDecoder(const WeightMatrix& w, Fn&& fn) {
  switch (w.format) {
    case WeightFormat::kF32: return fn(DecF32(w));
    case WeightFormat::kF16: return fn(DecF16(w));
    case WeightFormat::kBF16: return fn(DecBf16(w));
    case WeightFormat::kMlxAffine:
      switch (w.bits) {
        case 2: return fn(DecMlx<2>(w));
        case 3: return fn(DecMlx<3>(w));
        case 4: return WithMlxParams<4>(w, fn);
        case 5: return fn(DecMlx<5>(w));
        case 6: return fn(DecMlx<6>(w));
        default: return WithMlxParams<8>(w, fn);
      }
    case WeightFormat::kFp8E4M3: return fn(DecFp8(w));
    case WeightFormat::kGgml:
      switch (w.ggml_type) {
        case GgmlType::kF32: return fn(DecF32(w));
        case GgmlType::kF16: return fn(DecF16(w));
        case GgmlType::kBF16: return fn(DecBf16(w));
        case GgmlType::kQ8_0: return fn(DecQ8_0(w));
        case GgmlType::kQ4_0: return fn(DecQ4_0(w));
        case GgmlType::kQ4_1: return fn(DecQ4_1(w));
        case GgmlType::kQ5_0: return fn(DecQ5_0(w));
        case GgmlType::kQ5_1: return fn(DecQ5_1(w));
        case GgmlType::kQ4_K: return fn(DecQK45<false>(w));
        case GgmlType::kQ5_K: return fn(DecQK45<true>(w));
        case GgmlType::kQ6_K: return fn(DecQ6_K(w));
        default: return fn(DecQ8_K(w));
      }
  }
  return fn(DecF32(w));
}

}  // namespace llmhost::cpu::avx2

#endif  // __x86_64__
