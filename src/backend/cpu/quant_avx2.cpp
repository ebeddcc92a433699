// AVX2 dequantizers: the exact values of quant_formats.h's scalar code (same
// f32 operations in the same order: int -> f32 conversions are exact, then
// the format's multiply and add/subtract, never fused), 8 values at a time.
// Compiled for baseline x86-64; every function carries the AVX2 target
// attribute and runs only when cpu_features says the CPU has AVX2/FMA/F16C.
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/quant_formats.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>

#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

namespace llmhost::cpu {
namespace {

using quant::LoadU16;
using quant::LoadU32;

AVX2_FN inline float HalfAt(const uint8_t* p) { return _cvtsh_ss(LoadU16(p)); }

AVX2_FN inline __m256 U8ToPs(__m128i bytes8) {  // low 8 bytes, unsigned
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes8));
}
AVX2_FN inline __m256 I8ToPs(__m128i bytes8) {  // low 8 bytes, signed
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes8));
}
AVX2_FN inline __m128i Load8Bytes(const uint8_t* p) {
  return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
}

// --- plain floats -----------------------------------------------------------

AVX2_FN void DeqF32(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1, float* out) {
  const float* src = static_cast<const float*>(w.data) + row * w.cols;
  for (int64_t c = c0; c < c1; ++c) out[c - c0] = src[c];
}

AVX2_FN void DeqBf16(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1, float* out) {
  const uint16_t* src = static_cast<const uint16_t*>(w.data) + row * w.cols;
  int64_t c = c0;
  for (; c + 8 <= c1; c += 8) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c)));
    _mm256_storeu_ps(out + (c - c0), _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
  }
  for (; c < c1; ++c) out[c - c0] = Bf16ToF32(src[c]);
}

AVX2_FN void DeqF16(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1, float* out) {
  const uint16_t* src = static_cast<const uint16_t*>(w.data) + row * w.cols;
  int64_t c = c0;
  for (; c + 8 <= c1; c += 8) {
    _mm256_storeu_ps(out + (c - c0),
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c))));
  }
  for (; c < c1; ++c) out[c - c0] = _cvtsh_ss(src[c]);
}

// --- MLX affine -------------------------------------------------------------

// pshufb control: 32-bit lane i (of 8) gets bytes b, b+1 of the 8-byte group
// (b = first byte of value i), zero above.
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

// 8 consecutive quantized values (bit offset of the first a multiple of 8),
// as int32 lanes.
template <int kBits>
AVX2_FN inline __m256i MlxQ8(const uint8_t* p) {
  if constexpr (kBits == 8) {
    return _mm256_cvtepu8_epi32(Load8Bytes(p));
  } else if constexpr (kBits == 4) {
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(LoadU32(p))), shifts),
                            _mm256_set1_epi32(0xF));
  } else if constexpr (kBits == 2) {
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(LoadU16(p)), shifts),
                            _mm256_set1_epi32(0x3));
  } else {
    // 3, 5, 6 bits: the 8 values span kBits bytes. Lane i takes the 16-bit
    // window at byte (i*kBits)/8 and shifts by (i*kBits)%8.
    uint64_t u = 0;
    std::memcpy(&u, p, kBits);
    const __m256i bytes = _mm256_set1_epi64x(static_cast<long long>(u));
    static constexpr std::array<int8_t, 32> kCtl = MlxWindowShuffle(kBits);
    const __m256i ctl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kCtl.data()));
    const __m256i shifts = _mm256_setr_epi32(0, kBits % 8, (2 * kBits) % 8, (3 * kBits) % 8,
                                             (4 * kBits) % 8, (5 * kBits) % 8, (6 * kBits) % 8,
                                             (7 * kBits) % 8);
    const __m256i win = _mm256_shuffle_epi8(bytes, ctl);
    return _mm256_and_si256(_mm256_srlv_epi32(win, shifts), _mm256_set1_epi32((1 << kBits) - 1));
  }
}

template <int kBits>
AVX2_FN void DeqMlx(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1, float* out) {
  const uint8_t* bytes = static_cast<const uint8_t*>(w.data) + row * quant::RowBytes(w);
  const int64_t groups = w.cols / w.group_size;
  int64_t c = c0;
  while (c < c1) {
    const int64_t g = c / w.group_size;
    const int64_t end = std::min<int64_t>(c1, (g + 1) * w.group_size);
    const __m256 scale = _mm256_set1_ps(quant::MlxParam(w, w.scales, row * groups + g));
    const __m256 bias = _mm256_set1_ps(quant::MlxParam(w, w.biases, row * groups + g));
    for (; c < end; c += 8) {
      const __m256 q = _mm256_cvtepi32_ps(MlxQ8<kBits>(bytes + c * kBits / 8));
      __m256 prod = _mm256_mul_ps(scale, q);
      __asm__("" : "+x"(prod));  // rounded before the add: never fused into an FMA
      _mm256_storeu_ps(out + (c - c0), _mm256_add_ps(prod, bias));
    }
  }
}

// --- ggml blocks ------------------------------------------------------------

// Calls fn(block pointer, output pointer) for each block of the range.
template <int kSize, int kBytes, typename Fn>
AVX2_FN inline void ForBlocks(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1,
                              float* out, Fn fn) {
  const uint8_t* base = static_cast<const uint8_t*>(w.data) + row * (w.cols / kSize) * kBytes;
  for (int64_t b = c0 / kSize; b < c1 / kSize; ++b) fn(base + b * kBytes, out + (b * kSize - c0));
}

AVX2_FN inline void Q8_0Block(const uint8_t* b, float* y) {
  const __m256 d = _mm256_set1_ps(HalfAt(b));
  for (int i = 0; i < 4; ++i) _mm256_storeu_ps(y + 8 * i, _mm256_mul_ps(I8ToPs(Load8Bytes(b + 2 + 8 * i)), d));
}

// The 32 nibbles of a Q4/Q5 block as two 16-byte vectors: values 0..15 and 16..31.
AVX2_FN inline void Nibbles(const uint8_t* qs, __m128i* lo, __m128i* hi) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  *lo = _mm_and_si128(v, m);
  *hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
}

// Values 8*i .. 8*i+7 of a 32-value Q4/Q5 block as int32 lanes.
AVX2_FN inline __m256i Q4Part(__m128i lo, __m128i hi, int i) {
  const __m128i src = i < 2 ? lo : hi;
  return _mm256_cvtepu8_epi32((i & 1) ? _mm_srli_si128(src, 8) : src);
}

// Bit 4 of values j0..j0+7 from a Q5 qh word.
AVX2_FN inline __m256i Q5High(uint32_t qh, int j0) {
  const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(j0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i bit = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(qh)), idx),
                                       _mm256_set1_epi32(1));
  return _mm256_slli_epi32(bit, 4);
}

AVX2_FN inline void Q4_0Block(const uint8_t* b, float* y) {
  const __m256 d = _mm256_set1_ps(HalfAt(b));
  __m128i lo, hi;
  Nibbles(b + 2, &lo, &hi);
  const __m256i eight = _mm256_set1_epi32(8);
  for (int i = 0; i < 4; ++i) {
    const __m256 q = _mm256_cvtepi32_ps(_mm256_sub_epi32(Q4Part(lo, hi, i), eight));
    _mm256_storeu_ps(y + 8 * i, _mm256_mul_ps(q, d));
  }
}

AVX2_FN inline void Q4_1Block(const uint8_t* b, float* y) {
  const __m256 d = _mm256_set1_ps(HalfAt(b)), m = _mm256_set1_ps(HalfAt(b + 2));
  __m128i lo, hi;
  Nibbles(b + 4, &lo, &hi);
  for (int i = 0; i < 4; ++i) {
    const __m256 q = _mm256_cvtepi32_ps(Q4Part(lo, hi, i));
    _mm256_storeu_ps(y + 8 * i, _mm256_add_ps(_mm256_mul_ps(q, d), m));
  }
}

AVX2_FN inline void Q5_0Block(const uint8_t* b, float* y) {
  const __m256 d = _mm256_set1_ps(HalfAt(b));
  const uint32_t qh = LoadU32(b + 2);
  __m128i lo, hi;
  Nibbles(b + 6, &lo, &hi);
  const __m256i sixteen = _mm256_set1_epi32(16);
  for (int i = 0; i < 4; ++i) {
    const __m256i q = _mm256_or_si256(Q4Part(lo, hi, i), Q5High(qh, 8 * i));
    _mm256_storeu_ps(y + 8 * i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, sixteen)), d));
  }
}

AVX2_FN inline void Q5_1Block(const uint8_t* b, float* y) {
  const __m256 d = _mm256_set1_ps(HalfAt(b)), m = _mm256_set1_ps(HalfAt(b + 2));
  const uint32_t qh = LoadU32(b + 4);
  __m128i lo, hi;
  Nibbles(b + 8, &lo, &hi);
  for (int i = 0; i < 4; ++i) {
    const __m256i q = _mm256_or_si256(Q4Part(lo, hi, i), Q5High(qh, 8 * i));
    _mm256_storeu_ps(y + 8 * i, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d), m));
  }
}

// Q4_K (qh null) and Q5_K.
AVX2_FN inline void QK45Block(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = HalfAt(b), dmin = HalfAt(b + 2);
  const __m256i nib = _mm256_set1_epi32(0x0F), one = _mm256_set1_epi32(1);
  for (int j = 0; j < 8; ++j) {
    int sc, mn;
    quant::GetScaleMinK4(j, b + 4, &sc, &mn);
    const __m256 d1 = _mm256_set1_ps(d * static_cast<float>(sc));
    const __m256 m1 = _mm256_set1_ps(dmin * static_cast<float>(mn));
    const uint8_t* q = qs + 32 * (j / 2);
    const int shift = 4 * (j & 1);
    for (int l = 0; l < 32; l += 8) {
      __m256i v = _mm256_and_si256(_mm256_srli_epi32(_mm256_cvtepu8_epi32(Load8Bytes(q + l)), shift), nib);
      if (qh) {
        const __m256i h = _mm256_and_si256(_mm256_srli_epi32(_mm256_cvtepu8_epi32(Load8Bytes(qh + l)), j), one);
        v = _mm256_add_epi32(v, _mm256_slli_epi32(h, 4));
      }
      _mm256_storeu_ps(y + 32 * j + l, _mm256_sub_ps(_mm256_mul_ps(d1, _mm256_cvtepi32_ps(v)), m1));
    }
  }
}

AVX2_FN inline void Q6_KBlock(const uint8_t* b, float* y) {
  const float d = HalfAt(b + 208);
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
  const __m256i nib = _mm256_set1_epi32(0x0F), three = _mm256_set1_epi32(3);
  const __m256i off = _mm256_set1_epi32(32);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* sc = scales + 8 * h;
    for (int l = 0; l < 32; l += 8) {
      const __m256i a = _mm256_cvtepu8_epi32(Load8Bytes(ql + l));
      const __m256i c = _mm256_cvtepu8_epi32(Load8Bytes(ql + l + 32));
      const __m256i hb = _mm256_cvtepu8_epi32(Load8Bytes(qh + l));
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(a, nib), _mm256_slli_epi32(_mm256_and_si256(hb, three), 4)),
          _mm256_or_si256(_mm256_and_si256(c, nib),
                          _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(hb, 2), three), 4)),
          _mm256_or_si256(_mm256_srli_epi32(a, 4),
                          _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(hb, 4), three), 4)),
          _mm256_or_si256(_mm256_srli_epi32(c, 4), _mm256_slli_epi32(_mm256_srli_epi32(hb, 6), 4)),
      };
      for (int i = 0; i < 4; ++i) {
        const __m256 ds = _mm256_set1_ps(d * static_cast<float>(sc[l / 16 + 2 * i]));
        const __m256 qf = _mm256_cvtepi32_ps(_mm256_sub_epi32(q[i], off));
        _mm256_storeu_ps(y + 128 * h + 32 * i + l, _mm256_mul_ps(ds, qf));
      }
    }
  }
}

AVX2_FN inline void Q8_KBlock(const uint8_t* b, float* y) {
  const __m256 d = _mm256_set1_ps(quant::LoadF32(b));
  for (int i = 0; i < 32; ++i) _mm256_storeu_ps(y + 8 * i, _mm256_mul_ps(d, I8ToPs(Load8Bytes(b + 4 + 8 * i))));
}

struct Q8_0Op { AVX2_FN void operator()(const uint8_t* b, float* y) const { Q8_0Block(b, y); } };
struct Q4_0Op { AVX2_FN void operator()(const uint8_t* b, float* y) const { Q4_0Block(b, y); } };
struct Q4_1Op { AVX2_FN void operator()(const uint8_t* b, float* y) const { Q4_1Block(b, y); } };
struct Q5_0Op { AVX2_FN void operator()(const uint8_t* b, float* y) const { Q5_0Block(b, y); } };
struct Q5_1Op { AVX2_FN void operator()(const uint8_t* b, float* y) const { Q5_1Block(b, y); } };
struct Q4_KOp { AVX2_FN void operator()(const uint8_t* b, float* y) const { QK45Block(b, nullptr, b + 16, y); } };
struct Q5_KOp { AVX2_FN void operator()(const uint8_t* b, float* y) const { QK45Block(b, b + 16, b + 48, y); } };
struct Q6_KOp { AVX2_FN void operator()(const uint8_t* b, float* y) const { Q6_KBlock(b, y); } };
struct Q8_KOp { AVX2_FN void operator()(const uint8_t* b, float* y) const { Q8_KBlock(b, y); } };

template <int kSize, int kBytes, typename Op>
AVX2_FN void DeqGgml(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1, float* out) {
  ForBlocks<kSize, kBytes>(w, row, c0, c1, out, Op());
}

}  // namespace

DequantRangeFn SelectDequantAvx2(const WeightMatrix& w) {
  switch (w.format) {
    case WeightFormat::kF32: return DeqF32;
    case WeightFormat::kF16: return DeqF16;
    case WeightFormat::kBF16: return DeqBf16;
    case WeightFormat::kMlxAffine:
      switch (w.bits) {
        case 2: return DeqMlx<2>;
        case 3: return DeqMlx<3>;
        case 4: return DeqMlx<4>;
        case 5: return DeqMlx<5>;
        case 6: return DeqMlx<6>;
        case 8: return DeqMlx<8>;
        default: return nullptr;
      }
    case WeightFormat::kGgml:
      switch (w.ggml_type) {
        case GgmlType::kF32: return DeqF32;
        case GgmlType::kF16: return DeqF16;
        case GgmlType::kBF16: return DeqBf16;
        case GgmlType::kQ8_0: return DeqGgml<32, 34, Q8_0Op>;
        case GgmlType::kQ4_0: return DeqGgml<32, 18, Q4_0Op>;
        case GgmlType::kQ4_1: return DeqGgml<32, 20, Q4_1Op>;
        case GgmlType::kQ5_0: return DeqGgml<32, 22, Q5_0Op>;
        case GgmlType::kQ5_1: return DeqGgml<32, 24, Q5_1Op>;
        case GgmlType::kQ4_K: return DeqGgml<256, 144, Q4_KOp>;
        case GgmlType::kQ5_K: return DeqGgml<256, 176, Q5_KOp>;
        case GgmlType::kQ6_K: return DeqGgml<256, 210, Q6_KOp>;
        case GgmlType::kQ8_K: return DeqGgml<256, 292, Q8_KOp>;
        default: return nullptr;
      }
  }
  return nullptr;
}

}  // namespace llmhost::cpu

#else  // not x86-64

namespace llmhost::cpu {
DequantRangeFn SelectDequantAvx2(const WeightMatrix&) { return nullptr; }
}  // namespace llmhost::cpu

#endif
