// AVX2 + FMA bodies of vec_math.h; called only when the CPU has them.
#include "backend/cpu/vec_math.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#define LLMHOST_VEC_AVX2 __attribute__((target("avx2,fma")))

namespace llmhost::cpu::internal {
namespace {

// exp(x) for x <= 0 (the shifted logits): 2^k · e^y with |y| <= ln2 / 2, a
// degree-7 polynomial; below -87.3 (float underflow) exactly 0.
LLMHOST_VEC_AVX2 inline __m256 ExpNonPositive(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 y = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  y = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), y);
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f));
  // k >= -126 keeps the exponent field normal; the result underflows gently below.
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

}  // namespace

LLMHOST_VEC_AVX2 void SanitizeLogitsAvx2(const float* in, float* out, int64_t n) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 pinf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 big = _mm256_set1_ps(std::numeric_limits<float>::max());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(in + i);
    v = _mm256_blendv_ps(v, ninf, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    v = _mm256_blendv_ps(v, big, _mm256_cmp_ps(v, pinf, _CMP_EQ_OQ));
    _mm256_storeu_ps(out + i, v);
  }
  for (; i < n; ++i) {
    const float v = in[i];
    out[i] = std::isnan(v) ? -std::numeric_limits<float>::infinity()
             : v == std::numeric_limits<float>::infinity() ? std::numeric_limits<float>::max()
                                                           : v;
  }
}

LLMHOST_VEC_AVX2 int64_t ArgMaxAvx2(const float* x, int64_t n, float max) {
  const __m256 m = _mm256_set1_ps(max);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), m, _CMP_EQ_OQ));
    if (mask) return i + __builtin_ctz(static_cast<unsigned>(mask));
  }
  for (; i < n; ++i) {
    if (x[i] == max) return i;
  }
  return 0;
}

LLMHOST_VEC_AVX2 void TopIndicesAvx2(TopHeap& h, int64_t n) {
  int64_t i = static_cast<int64_t>(h.k);
  for (; i < n && (i & 7); ++i) {
    if (h.x[i] > h.worst()) h.Offer(static_cast<int32_t>(i));
  }
  __m256 worst = _mm256_set1_ps(h.worst());
  for (; i + 8 <= n; i += 8) {
    unsigned mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(h.x + i), worst, _CMP_GT_OQ)));
    if (!mask) continue;
    while (mask) {
      const int64_t j = i + __builtin_ctz(mask);
      if (h.x[j] > h.worst()) h.Offer(static_cast<int32_t>(j));
      mask &= mask - 1;
    }
    worst = _mm256_set1_ps(h.worst());
  }
  for (; i < n; ++i) {
    if (h.x[i] > h.worst()) h.Offer(static_cast<int32_t>(i));
  }
}

LLMHOST_VEC_AVX2 void CollectBandAvx2(const float* w, int64_t n, float lo, float hi, std::vector<int32_t>* out) {
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(w + i);
    unsigned mask = static_cast<unsigned>(_mm256_movemask_ps(
        _mm256_and_ps(_mm256_cmp_ps(v, vlo, _CMP_GE_OQ), _mm256_cmp_ps(v, vhi, _CMP_LT_OQ))));
    while (mask) {
      out->push_back(static_cast<int32_t>(i + __builtin_ctz(mask)));
      mask &= mask - 1;
    }
  }
  for (; i < n; ++i) {
    if (w[i] >= lo && w[i] < hi) out->push_back(static_cast<int32_t>(i));
  }
}

LLMHOST_VEC_AVX2 double ZeroBelowAvx2(float* w, int64_t n, float lo, int64_t block, double* block_sums) {
  const __m256 vlo = _mm256_set1_ps(lo);
  double total = 0;
  for (int64_t b = 0; b * block < n; ++b) {
    const int64_t end = std::min(n, (b + 1) * block);
    int64_t i = b * block;
    __m256 acc = _mm256_setzero_ps();  // at most block / 8 weights <= 1 per lane: float is exact enough
    for (; i + 8 <= end; i += 8) {
      const __m256 v = _mm256_loadu_ps(w + i);
      const __m256 kept = _mm256_and_ps(v, _mm256_cmp_ps(v, vlo, _CMP_GE_OQ));
      _mm256_storeu_ps(w + i, kept);
      acc = _mm256_add_ps(acc, kept);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    double s = 0;
    for (float f : lanes) s += f;
    for (; i < end; ++i) {
      if (w[i] < lo) w[i] = 0;
      s += w[i];
    }
    block_sums[b] = s;
    total += s;
  }
  return total;
}

LLMHOST_VEC_AVX2 float MaxValueAvx2(const float* x, int64_t n) {
  int64_t i = 0;
  float m = x[0];
  if (n >= 32) {
    __m256 m0 = _mm256_loadu_ps(x), m1 = m0, m2 = m0, m3 = m0;
    for (; i + 32 <= n; i += 32) {
      m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
      m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
      m2 = _mm256_max_ps(m2, _mm256_loadu_ps(x + i + 16));
      m3 = _mm256_max_ps(m3, _mm256_loadu_ps(x + i + 24));
    }
    const __m256 v = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    m = *std::max_element(lanes, lanes + 8);
  }
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

LLMHOST_VEC_AVX2 float MaxIgnoringNanAvx2(const float* x, int64_t n) {
  // max(load, acc): where the load is NaN, maxps gives its second operand, acc.
  const __m256 low = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 m0 = low, m1 = low, m2 = low, m3 = low;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    m2 = _mm256_max_ps(_mm256_loadu_ps(x + i + 16), m2);
    m3 = _mm256_max_ps(_mm256_loadu_ps(x + i + 24), m3);
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
  const __m256 v = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float m = *std::max_element(lanes, lanes + 8);
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

LLMHOST_VEC_AVX2 double ExpShiftedAvx2(const float* x, int64_t n, float shift, float scale, float* out) {
  const __m256 vs = _mm256_set1_ps(shift), vk = _mm256_set1_ps(scale), one = _mm256_set1_ps(1.0f);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vs);
    const __m256 is_top = _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_EQ_OQ);
    // d * scale with scale = +inf: -inf for d < 0 (weight 0); d = 0 is blended to 1 below.
    const __m256 w = _mm256_blendv_ps(ExpNonPositive(_mm256_mul_ps(d, vk)), one, is_top);
    _mm256_storeu_ps(out + i, w);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(w)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(w, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(s0, s1));
  double sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) {
    const float d = x[i] - shift;
    const float w = d == 0 ? 1.0f : std::exp(d * scale);
    out[i] = w;
    sum += w;
  }
  return sum;
}

}  // namespace llmhost::cpu::internal
#endif
