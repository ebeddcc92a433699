// AVX2 + FMA body of the CPU attention. Functions carry target attributes and
// run only when the CPU supports them (cpu_features.h). Keys and values are
// walked one KV block at a time (rows of a block are contiguous).
#include "backend/cpu/ops_attention_kernels.h"

#include "backend/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#define LLMHOST_ATTN_AVX2 __attribute__((target("avx2,fma")))

namespace llmhost::cpu {
namespace {

LLMHOST_ATTN_AVX2 inline float HSum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

LLMHOST_ATTN_AVX2 inline float Dot(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  if (i + 8 <= n) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    i += 8;
  }
  float s = HSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// exp(x) for x <= 0 (softmax arguments): 2^(x log2 e) as an integer power
// times a degree-6 polynomial of the fraction (relative error ~2e-7).
LLMHOST_ATTN_AVX2 inline __m256 Exp(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f));
  const __m256 k = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 y = _mm256_mul_ps(_mm256_sub_ps(t, k), _mm256_set1_ps(0.693147180559945309f));
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, y, _mm256_set1_ps(1.0f));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// x[i] = exp(x[i] - max) / Σ.
LLMHOST_ATTN_AVX2 void Softmax(float* x, int64_t n) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  float mx = -INFINITY;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  for (float l : lanes) mx = std::max(mx, l);
  for (int64_t j = i; j < n; ++j) mx = std::max(mx, x[j]);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  double sum = HSum(acc);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
  for (; i < n; ++i) x[i] *= static_cast<float>(1.0 / sum);
}

LLMHOST_ATTN_AVX2 void AttendGroup(const float* q, const float* k_cache, const float* v_cache,
                                   const AttentionSeq& s, int64_t row, int64_t pos,
                                   int64_t kv_head, const AttentionParams& p, float* scores,
                                   float* out) {
  const int64_t kv_dim = p.n_kv_heads * p.head_dim, d = p.head_dim, bs = p.block_size;
  const int64_t group = p.n_heads / p.n_kv_heads;
  const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
  const int64_t n_keys = pos - lo + 1;
  const float* qg = q + row * p.q_stride + kv_head * group * d;
  float* og = out + row * p.out_stride + kv_head * group * d;
  // Scores, one KV block at a time.
  for (int64_t j0 = lo; j0 <= pos;) {
    const int64_t b = j0 / bs, j1 = std::min(pos + 1, (b + 1) * bs);
    const float* kb = k_cache + (static_cast<int64_t>(s.block_table[b]) * bs) * kv_dim + kv_head * d;
    for (int64_t j = j0; j < j1; ++j) {
      const float* kr = kb + (j - b * bs) * kv_dim;
      for (int64_t h = 0; h < group; ++h) {
        float sc = Dot(qg + h * d, kr, d) * p.scale;
        if (p.softcap > 0) sc = p.softcap * std::tanh(sc / p.softcap);
        scores[h * n_keys + (j - lo)] = sc;
      }
    }
    j0 = j1;
  }
  for (int64_t h = 0; h < group; ++h) Softmax(scores + h * n_keys, n_keys);
  // out[h] = Σ_j p[h][j] v_j, 64 columns (8 registers) at a time.
  for (int64_t h = 0; h < group; ++h) {
    const float* ph = scores + h * n_keys;
    for (int64_t c0 = 0; c0 < d; c0 += 64) {
      const int64_t width = std::min<int64_t>(64, d - c0);
      const int64_t vecs = width / 8;
      __m256 acc[8];
      for (int k = 0; k < 8; ++k) acc[k] = _mm256_setzero_ps();
      float tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t j0 = lo; j0 <= pos;) {
        const int64_t b = j0 / bs, j1 = std::min(pos + 1, (b + 1) * bs);
        const float* vb =
            v_cache + (static_cast<int64_t>(s.block_table[b]) * bs) * kv_dim + kv_head * d + c0;
        for (int64_t j = j0; j < j1; ++j) {
          const float* vr = vb + (j - b * bs) * kv_dim;
          const float w = ph[j - lo];
          const __m256 vw = _mm256_set1_ps(w);
          for (int64_t k = 0; k < vecs; ++k) acc[k] = _mm256_fmadd_ps(vw, _mm256_loadu_ps(vr + 8 * k), acc[k]);
          for (int64_t c = vecs * 8; c < width; ++c) tail[c - vecs * 8] += w * vr[c];
        }
        j0 = j1;
      }
      float* o = og + h * d + c0;
      for (int64_t k = 0; k < vecs; ++k) _mm256_storeu_ps(o + 8 * k, acc[k]);
      for (int64_t c = vecs * 8; c < width; ++c) o[c] = tail[c - vecs * 8];
    }
  }
}

}  // namespace

AttendGroupFn AttendGroupAvx2() {
  return ActiveCpuIsa() == CpuIsa::kScalar ? nullptr : &AttendGroup;
}

}  // namespace llmhost::cpu

#else

namespace llmhost::cpu {
AttendGroupFn AttendGroupAvx2() { return nullptr; }
}  // namespace llmhost::cpu

#endif
