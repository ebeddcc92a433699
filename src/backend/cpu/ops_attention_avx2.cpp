// AVX2 + FMA body of the CPU attention. Functions carry target attributes and
// run only when the CPU supports them (cpu_features.h).
//
// A work item is a tile of consecutive query rows of one sequence (up to
// kQueryTile in a prefill, one in a decode) against one KV head, for all the
// query heads of its GQA group: each K and V row is read once per tile
// instead of once per query. Scores: 64 keys' K rows transposed into lanes,
// then 6 query rows x 16 keys per register tile. Values: 4 rows x 24 columns.
#include "backend/cpu/ops_attention_kernels.h"

#include "backend/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#define LLMHOST_ATTN_AVX2 __attribute__((target("avx2,fma")))

namespace llmhost::cpu {
namespace {

LLMHOST_ATTN_AVX2 inline float HSum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
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

// Grow-only per-thread scratch.
thread_local std::vector<float> tls_scores, tls_kt;

// Key j's K (or V) row of this KV head.
inline const float* KvRow(const float* cache, const AttentionSeq& s, int64_t j, const AttentionParams& p,
                          int64_t kv_head) {
  const int64_t slot = static_cast<int64_t>(s.block_table[j / p.block_size]) * p.block_size + j % p.block_size;
  return cache + slot * p.n_kv_heads * p.head_dim + kv_head * p.head_dim;
}

// Scores of kR query rows against 16 keys: s[r][k] = Σ_c q[r][c] kt[c][k],
// one FMA per c in order from c = 0 (keys in lanes).
template <int kR>
LLMHOST_ATTN_AVX2 inline void Scores16(const float* const* qr, const float* kt, int64_t d, float* const* out) {
  __m256 acc[kR][2];
  for (int r = 0; r < kR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t c = 0; c < d; ++c) {
    const __m256 k0 = _mm256_loadu_ps(kt + c * 16), k1 = _mm256_loadu_ps(kt + c * 16 + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kR; ++r) {
      const __m256 b = _mm256_broadcast_ss(qr[r] + c);
      acc[r][0] = _mm256_fmadd_ps(b, k0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(b, k1, acc[r][1]);
    }
  }
  for (int r = 0; r < kR; ++r) {
    _mm256_storeu_ps(out[r], acc[r][0]);
    _mm256_storeu_ps(out[r] + 8, acc[r][1]);
  }
}

// o[r][c0 .. c0 + 8 kV) = Σ_j p[r][j] v_j[...] for j in [0, n), one FMA per
// key in order from the first (kR <= 4 rows, kV <= 3 vectors).
template <int kR, int kV>
LLMHOST_ATTN_AVX2 inline void Values(const float* const* pr, const float* const* vrows, int64_t n, int64_t c0,
                                     float* const* o) {
  __m256 acc[kR][kV];
  for (int r = 0; r < kR; ++r) {
    for (int v = 0; v < kV; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t j = 0; j < n; ++j) {
    __m256 vv[kV];
    for (int v = 0; v < kV; ++v) vv[v] = _mm256_loadu_ps(vrows[j] + c0 + 8 * v);
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
      const __m256 b = _mm256_broadcast_ss(pr[r] + j);
      for (int v = 0; v < kV; ++v) acc[r][v] = _mm256_fmadd_ps(b, vv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < kR; ++r) {
    for (int v = 0; v < kV; ++v) _mm256_storeu_ps(o[r] + c0 + 8 * v, acc[r][v]);
  }
}

template <int kV>
LLMHOST_ATTN_AVX2 void ValuesRows(const float* const* pr, int64_t rows, const float* const* vrows, int64_t n,
                                  int64_t c0, float* const* o) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) Values<4, kV>(pr + r, vrows, n, c0, o + r);
  switch (rows - r) {
    case 3: Values<3, kV>(pr + r, vrows, n, c0, o + r); break;
    case 2: Values<2, kV>(pr + r, vrows, n, c0, o + r); break;
    case 1: Values<1, kV>(pr + r, vrows, n, c0, o + r); break;
    default: break;
  }
}

// Query rows [row0, row0 + nq) of one sequence (positions pos0 ...) against
// one KV head, for the heads of its GQA group: R = nq * group score rows
// over the tile's key range [L, H] (the union of the rows' ranges). Every
// output is computed by the same operations whatever nq (see the header).
LLMHOST_ATTN_AVX2 void AttendTile(const float* q, const float* k_cache, const float* v_cache, const AttentionSeq& s,
                                  int64_t row0, int64_t pos0, int64_t nq, int64_t kv_head, const AttentionParams& p,
                                  float* out) {
  const int64_t d = p.head_dim, group = p.n_heads / p.n_kv_heads, R = nq * group;
  auto lo_of = [&](int64_t pos) { return p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0; };
  const int64_t L = lo_of(pos0), H = pos0 + nq - 1, n = H - L + 1;
  const int64_t n16 = (n + 15) / 16 * 16;
  if (tls_scores.size() < static_cast<size_t>(R * n16)) tls_scores.resize(R * n16);
  if (tls_kt.size() < static_cast<size_t>(d * 64)) tls_kt.resize(d * 64);
  float* S = tls_scores.data();
  float* kt = tls_kt.data();
  std::vector<const float*> qrows(R), vrows(n);
  std::vector<float*> srows(R), orows(R);
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t h = 0; h < group; ++h) {
      const int64_t r = i * group + h;
      qrows[r] = q + (row0 + i) * p.q_stride + (kv_head * group + h) * d;
      orows[r] = out + (row0 + i) * p.out_stride + (kv_head * group + h) * d;
      srows[r] = S + r * n16;
    }
  }
  // Scores, 64 keys at a time: transpose their K rows (zero past the range).
  std::vector<float*> dst(R);
  for (int64_t j0 = 0; j0 < n; j0 += 64) {
    const int64_t m = std::min<int64_t>(64, n - j0), m16 = (m + 15) / 16 * 16;
    for (int64_t jj = 0; jj < m16; ++jj) {
      if (jj < m) {
        const float* kr = KvRow(k_cache, s, L + j0 + jj, p, kv_head);
        for (int64_t c = 0; c < d; ++c) kt[(jj / 16) * d * 16 + c * 16 + jj % 16] = kr[c];
      } else {
        for (int64_t c = 0; c < d; ++c) kt[(jj / 16) * d * 16 + c * 16 + jj % 16] = 0.0f;
      }
    }
    for (int64_t g = 0; g < m16; g += 16) {
      const float* ktg = kt + (g / 16) * d * 16;
      int64_t r = 0;
      for (; r < R; r += 6) {
        const int64_t k = std::min<int64_t>(6, R - r);
        for (int64_t i = 0; i < k; ++i) dst[i] = srows[r + i] + j0 + g;
        switch (k) {
          case 6: Scores16<6>(&qrows[r], ktg, d, dst.data()); break;
          case 5: Scores16<5>(&qrows[r], ktg, d, dst.data()); break;
          case 4: Scores16<4>(&qrows[r], ktg, d, dst.data()); break;
          case 3: Scores16<3>(&qrows[r], ktg, d, dst.data()); break;
          case 2: Scores16<2>(&qrows[r], ktg, d, dst.data()); break;
          default: Scores16<1>(&qrows[r], ktg, d, dst.data()); break;
        }
      }
    }
  }
  // Each row: scale (and cap) its own range, softmax over it, zero the rest.
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t a = lo_of(pos0 + i) - L, b = pos0 + i - L + 1;
    for (int64_t h = 0; h < group; ++h) {
      float* sr = srows[i * group + h];
      for (int64_t j = a; j < b; ++j) {
        float sc = sr[j] * p.scale;
        if (p.softcap > 0) sc = p.softcap * std::tanh(sc / p.softcap);
        sr[j] = sc;
      }
      Softmax(sr + a, b - a);
      std::fill(sr, sr + a, 0.0f);
      std::fill(sr + b, sr + n16, 0.0f);
    }
  }
  // out = Σ_j p_j v_j: zero weights add +-0 (an exact no-op on the sum), so a
  // row's sum is the same as over its own range alone.
  for (int64_t j = 0; j < n; ++j) vrows[j] = KvRow(v_cache, s, L + j, p, kv_head);
  const float* const* pr = srows.data();
  int64_t c0 = 0;
  for (; c0 + 24 <= d; c0 += 24) ValuesRows<3>(pr, R, vrows.data(), n, c0, orows.data());
  if (d - c0 >= 16) {
    ValuesRows<2>(pr, R, vrows.data(), n, c0, orows.data());
    c0 += 16;
  } else if (d - c0 >= 8) {
    ValuesRows<1>(pr, R, vrows.data(), n, c0, orows.data());
    c0 += 8;
  }
  for (int64_t r = 0; r < R; ++r) {  // head_dim % 8 columns: the same FMA order, scalar
    for (int64_t c = c0; c < d; ++c) {
      float acc = 0.0f;
      for (int64_t j = 0; j < n; ++j) acc = std::fma(pr[r][j], vrows[j][c], acc);
      orows[r][c] = acc;
    }
  }
}

}  // namespace

AttendTileFn AttendTileAvx2() {
  return ActiveCpuIsa() == CpuIsa::kScalar ? nullptr : &AttendTile;
}

}  // namespace llmhost::cpu

#else

namespace llmhost::cpu {
AttendTileFn AttendTileAvx2() { return nullptr; }
}  // namespace llmhost::cpu

#endif
