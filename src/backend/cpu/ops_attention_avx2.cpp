// AVX2 + FMA body of the CPU attention. Functions carry target attributes and
// run only when the CPU supports them (cpu_features.h).
//
// A call covers a tile of consecutive query rows of one sequence (up to
// kQueryTile in a prefill, one in a decode) against one KV head and one key
// segment, for all the query heads of its GQA group: each K and V row is
// read once per tile instead of once per query. Scores: 64 keys' K rows
// transposed into lanes, then 6 query rows x 16 keys per register tile.
// Values: 4 rows x 24 columns. The segments' partials are combined by
// CombineSegments (ops_attention_kernels.h gives the arithmetic).
#include "backend/cpu/ops_attention_kernels.h"

#include "backend/cpu/convert_rows.h"
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

// x[i] = exp(x[i] - max), in place; returns Σ and sets *max_out.
LLMHOST_ATTN_AVX2 float ExpSum(float* x, int64_t n, float* max_out) {
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
  *max_out = mx;
  return static_cast<float>(sum);
}

// Grow-only per-thread scratch (kwide / vwide: 16-bit K and V rows widened to f32).
thread_local std::vector<float> tls_scores, tls_kt, tls_zeros, tls_kwide, tls_vwide;

// Element offset of key j's K (or V) row of this KV head.
inline int64_t KvOffset(const AttentionSeq& s, int64_t j, const AttentionParams& p, int64_t kv_head) {
  const int64_t slot = static_cast<int64_t>(s.block_table[j / p.block_size]) * p.block_size + j % p.block_size;
  return slot * p.n_kv_heads * p.head_dim + kv_head * p.head_dim;
}

// Rows [j0, j0 + m) of a KV head as f32: in place for an f32 cache, else
// widened into `wide` (exactly: every 16-bit or FP8 value is an f32 value).
LLMHOST_ATTN_AVX2 void KvRows(const void* cache, const AttentionSeq& s, int64_t j0, int64_t m,
                              const AttentionParams& p, int64_t kv_head, std::vector<float>& wide,
                              const float** rows) {
  const int64_t d = p.head_dim;
  if (p.kv_dtype == DType::kF32) {
    for (int64_t k = 0; k < m; ++k) rows[k] = static_cast<const float*>(cache) + KvOffset(s, j0 + k, p, kv_head);
    return;
  }
  if (wide.size() < static_cast<size_t>(m * d)) wide.resize(static_cast<size_t>(m * d));
  for (int64_t k = 0; k < m; ++k) {
    float* w = wide.data() + k * d;
    KvToFloats(cache, KvOffset(s, j0 + k, p, kv_head), w, d, p.kv_dtype);
    rows[k] = w;
  }
}

// kt[c * 16 + k] = rows[k][c] for k < 8, c < 8 (one 8 x 8 transpose).
LLMHOST_ATTN_AVX2 inline void Transpose8(const float* const* rows, int64_t c0, float* kt) {
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(rows[k] + c0);
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    r[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
    r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);
    r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
    r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
  }
  // r[0..3]: columns 0,1,2,3 (and 4..7 in the high halves) of keys 0-3; r[4..7] of keys 4-7.
  for (int c = 0; c < 4; ++c) {
    _mm256_storeu_ps(kt + (c0 + c) * 16, _mm256_permute2f128_ps(r[c], r[c + 4], 0x20));
    _mm256_storeu_ps(kt + (c0 + c + 4) * 16, _mm256_permute2f128_ps(r[c], r[c + 4], 0x31));
  }
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

// o[r][c0 .. c0 + 8 kV) (+)= Σ_j p[r][j] v_j[...] for j in [j0, j1), one FMA
// per key in order (kR <= 4 rows, kV <= 3 vectors); from +0 when `init`, else
// continuing the chain from the stored sums.
template <int kR, int kV>
LLMHOST_ATTN_AVX2 inline void Values(const float* const* pr, const float* const* vrows, int64_t j0, int64_t j1,
                                     int64_t c0, float* const* o, bool init) {
  __m256 acc[kR][kV];
  for (int r = 0; r < kR; ++r) {
    for (int v = 0; v < kV; ++v) acc[r][v] = init ? _mm256_setzero_ps() : _mm256_loadu_ps(o[r] + c0 + 8 * v);
  }
  for (int64_t j = j0; j < j1; ++j) {
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
LLMHOST_ATTN_AVX2 void ValuesRows(const float* const* pr, int64_t rows, const float* const* vrows, int64_t j0,
                                  int64_t j1, int64_t c0, float* const* o, bool init) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) Values<4, kV>(pr + r, vrows, j0, j1, c0, o + r, init);
  switch (rows - r) {
    case 3: Values<3, kV>(pr + r, vrows, j0, j1, c0, o + r, init); break;
    case 2: Values<2, kV>(pr + r, vrows, j0, j1, c0, o + r, init); break;
    case 1: Values<1, kV>(pr + r, vrows, j0, j1, c0, o + r, init); break;
    default: break;
  }
}

// Query rows [row0, row0 + nq) of one sequence (positions pos0 ...) against
// one KV head, for the heads of its GQA group: R = nq * group score rows
// over the tile's key range within segment [j0, j1): [L, H], the union of
// the rows' ranges there. Every partial is computed by the same operations
// whatever nq (see the header).
LLMHOST_ATTN_AVX2 void AttendSegment(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq& s,
                                     int64_t row0, int64_t pos0, int64_t nq, int64_t kv_head, const AttentionParams& p,
                                     int64_t j0, int64_t j1, float* part) {
  const int64_t d = p.head_dim, group = p.n_heads / p.n_kv_heads, R = nq * group, ps = PartialStride(d);
  auto lo_of = [&](int64_t pos) { return p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0; };
  const int64_t L = std::max(lo_of(pos0), j0), H = std::min(pos0 + nq - 1, j1 - 1), n = H - L + 1;
  if (n <= 0) {  // no row has keys here
    for (int64_t r = 0; r < R; ++r) {
      std::fill(part + r * ps, part + r * ps + d, 0.0f);
      part[r * ps + d] = -INFINITY;
      part[r * ps + d + 1] = 0.0f;
    }
    return;
  }
  const int64_t n16 = (n + 15) / 16 * 16;
  if (tls_scores.size() < static_cast<size_t>(R * n16)) tls_scores.resize(R * n16);
  if (tls_kt.size() < static_cast<size_t>(d * 64)) tls_kt.resize(d * 64);
  if (tls_zeros.size() < static_cast<size_t>(d)) tls_zeros.assign(d, 0.0f);
  const float* zeros = tls_zeros.data();
  float* S = tls_scores.data();
  float* kt = tls_kt.data();
  // Row pointers, per-thread and reused (a decode calls this per layer and KV head).
  thread_local std::vector<const float*> qrows, vrows, krows;
  thread_local std::vector<float*> srows, orows, dst;
  qrows.resize(R);
  vrows.resize(n);
  krows.resize(64);
  srows.resize(R);
  orows.resize(R);
  dst.resize(R);
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t h = 0; h < group; ++h) {
      const int64_t r = i * group + h;
      qrows[r] = q + (row0 + i) * p.q_stride + (kv_head * group + h) * d;
      orows[r] = part + r * ps;
      srows[r] = S + r * n16;
    }
  }
  // Scores, 64 keys at a time: transpose their K rows (zero past the range).
  for (int64_t k0 = 0; k0 < n; k0 += 64) {
    const int64_t m = std::min<int64_t>(64, n - k0), m16 = (m + 15) / 16 * 16;
    KvRows(k_cache, s, L + k0, m, p, kv_head, tls_kwide, krows.data());
    for (int64_t j8 = 0; j8 < m16; j8 += 8) {
      const float* kr[8];
      for (int64_t k = 0; k < 8; ++k) kr[k] = j8 + k < m ? krows[j8 + k] : zeros;
      float* ktg = kt + (j8 / 16) * d * 16 + j8 % 16;
      int64_t c = 0;
      for (; c + 8 <= d; c += 8) Transpose8(kr, c, ktg);
      for (; c < d; ++c) {
        for (int64_t k = 0; k < 8; ++k) ktg[c * 16 + k] = kr[k][c];
      }
    }
    for (int64_t g = 0; g < m16; g += 16) {
      const float* ktg = kt + (g / 16) * d * 16;
      int64_t r = 0;
      for (; r < R; r += 6) {
        const int64_t k = std::min<int64_t>(6, R - r);
        for (int64_t i = 0; i < k; ++i) dst[i] = srows[r + i] + k0 + g;
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
  // Each row: scale (and cap) its own range here, exp and sum over it
  // (its m and l), zero the rest.
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t a = std::max(lo_of(pos0 + i), L) - L, b = std::min(pos0 + i, H) - L + 1;
    for (int64_t h = 0; h < group; ++h) {
      const int64_t r = i * group + h;
      float* sr = srows[r];
      if (a >= b) {  // this row has no keys in the segment
        std::fill(sr, sr + n16, 0.0f);
        part[r * ps + d] = -INFINITY;
        part[r * ps + d + 1] = 0.0f;
        continue;
      }
      if (p.softcap > 0) {
        for (int64_t j = a; j < b; ++j) sr[j] = p.softcap * std::tanh(sr[j] * p.scale / p.softcap);
      } else {
        const __m256 vs = _mm256_set1_ps(p.scale);
        int64_t j = a;
        for (; j + 8 <= b; j += 8) _mm256_storeu_ps(sr + j, _mm256_mul_ps(_mm256_loadu_ps(sr + j), vs));
        for (; j < b; ++j) sr[j] *= p.scale;
      }
      float mx;
      part[r * ps + d + 1] = ExpSum(sr + a, b - a, &mx);
      part[r * ps + d] = mx;
      std::fill(sr, sr + a, 0.0f);
      std::fill(sr + b, sr + n16, 0.0f);
    }
  }
  // o = Σ_j e_j v_j: zero weights add +-0 (an exact no-op on the sum), so a
  // row's sum is the same as over its own range alone. Keys in chunks whose V
  // rows and weights stay in cache while every row runs over them; the sums
  // wait in `out` between chunks (the chain continues: the same bits).
  const float* const* pr = srows.data();
  constexpr int64_t kKeyChunk = 128;
  for (int64_t c0k = 0; c0k < n; c0k += kKeyChunk) {
    const int64_t c1k = std::min(n, c0k + kKeyChunk);
    KvRows(v_cache, s, L + c0k, c1k - c0k, p, kv_head, tls_vwide, vrows.data() + c0k);
    const bool init = c0k == 0;
    int64_t c0 = 0;
    for (; c0 + 24 <= d; c0 += 24) ValuesRows<3>(pr, R, vrows.data(), c0k, c1k, c0, orows.data(), init);
    if (d - c0 >= 16) {
      ValuesRows<2>(pr, R, vrows.data(), c0k, c1k, c0, orows.data(), init);
      c0 += 16;
    } else if (d - c0 >= 8) {
      ValuesRows<1>(pr, R, vrows.data(), c0k, c1k, c0, orows.data(), init);
      c0 += 8;
    }
    for (int64_t r = 0; r < R; ++r) {  // head_dim % 8 columns: the same FMA chain, scalar
      for (int64_t c = c0; c < d; ++c) {
        float acc = init ? 0.0f : orows[r][c];
        for (int64_t j = c0k; j < c1k; ++j) acc = std::fma(pr[r][j], vrows[j][c], acc);
        orows[r][c] = acc;
      }
    }
  }
}


// out = (Σ_s w_s o_s) / Σ_s w_s l_s with w_s = exp(m_s - M), segments in order.
LLMHOST_ATTN_AVX2 void CombineSegments(const float* parts, int64_t n_segments, int64_t row0, int64_t nq,
                                       int64_t kv_head, const AttentionParams& p, float* out) {
  const int64_t d = p.head_dim, group = p.n_heads / p.n_kv_heads, R = nq * group, ps = PartialStride(d);
  thread_local std::vector<float> weights;
  weights.resize(static_cast<size_t>(n_segments));
  for (int64_t r = 0; r < R; ++r) {
    float M = -INFINITY;
    for (int64_t sg = 0; sg < n_segments; ++sg) M = std::max(M, parts[(sg * R + r) * ps + d]);
    float l = 0.0f;
    for (int64_t sg = 0; sg < n_segments; ++sg) {
      const float m = parts[(sg * R + r) * ps + d];
      weights[sg] = m == -INFINITY ? 0.0f : std::exp(m - M);
      l = std::fma(weights[sg], parts[(sg * R + r) * ps + d + 1], l);
    }
    const float inv = 1.0f / l;
    const int64_t i = r / group, h = r % group;
    float* o = out + (row0 + i) * p.out_stride + (kv_head * group + h) * d;
    int64_t c = 0;
    for (; c + 8 <= d; c += 8) {
      __m256 acc = _mm256_setzero_ps();
      for (int64_t sg = 0; sg < n_segments; ++sg) {
        if (weights[sg] == 0.0f) continue;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(weights[sg]), _mm256_loadu_ps(parts + (sg * R + r) * ps + c), acc);
      }
      _mm256_storeu_ps(o + c, _mm256_mul_ps(acc, _mm256_set1_ps(inv)));
    }
    for (; c < d; ++c) {
      float acc = 0.0f;
      for (int64_t sg = 0; sg < n_segments; ++sg) {
        if (weights[sg] != 0.0f) acc = std::fma(weights[sg], parts[(sg * R + r) * ps + c], acc);
      }
      o[c] = acc * inv;
    }
  }
}

}  // namespace

AttendTileFns AttendTileAvx2() {
  if (ActiveCpuIsa() == CpuIsa::kScalar) return {};
  return {&AttendSegment, &CombineSegments};
}

}  // namespace llmhost::cpu

#else

namespace llmhost::cpu {
AttendTileFns AttendTileAvx2() { return {}; }
}  // namespace llmhost::cpu

#endif
