// AVX2 + FMA and AVX-512 bodies of the encoders' bidirectional attention (ops_encoder.h):
// a tile of query rows of one sequence and one head against all the
// sequence's keys. The head's K rows are transposed into [head_dim][keys]
// once per tile, so that 4 query rows x 16 keys accumulate in registers over
// the head's columns (no horizontal sums); values are 4 rows x 16 columns
// over the keys (AVX-512: 8 rows x 32). Each row's arithmetic is the same whichever rows share its
// register tile (a short tile repeats its first row and drops the copies),
// so a row's result depends on its own sequence only.
#include "backend/cpu/ops_encoder_kernels.h"

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/vec_math.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#define LLMHOST_ENC_AVX2 __attribute__((target("avx2,fma")))
#define LLMHOST_ENC_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace llmhost::cpu {
namespace {

constexpr int64_t kRows = 4;  // query rows per register tile

// The relative position terms of row i (BERT's relative_key[_query]) added to
// its raw scores; plain loops: the models that use them are rare.
void AddRelative(const float* qi, const float* k, int64_t kstride, const EncoderAttentionParams& p, int64_t i,
                 int64_t len, float* scores) {
  const int64_t d = p.head_dim;
  for (int64_t j = 0; j < len; ++j) {
    const float* r = p.relative + (i - j + p.max_distance - 1) * d;
    float dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += qi[c] * r[c];
    if (p.relative_keys) {
      const float* kj = k + j * kstride;
      for (int64_t c = 0; c < d; ++c) dot += kj[c] * r[c];
    }
    scores[j] += dot;
  }
}

// kt[c][j] = key j's column c for j < len, 0 up to lp: the head's keys as
// [head_dim][lp] rows the score loops read 8 or 16 keys at a time.
void TransposeKeys(const float* k0, int64_t qs, int64_t d, int64_t len, int64_t lp, float* kt) {
  for (int64_t c = 0; c < d; ++c) {
    float* row = kt + c * lp;
    for (int64_t j = 0; j < len; ++j) row[j] = k0[j * qs + c];
    std::fill(row + len, row + lp, 0.0f);
  }
}

// The raw scores of `rows` rows (at sc, lp apart; row r is query row
// first + r) become exp(scale · (score - max)) in place, relative terms
// added first; inv[r] = 1 / their sum.
void SoftmaxRows(float* sc, int64_t rows, int64_t lp, const float* const* qr, const float* k0, int64_t qs,
                 const EncoderAttentionParams& p, const int64_t* first_of, int64_t len, float* inv) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = sc + r * lp;
    if (p.relative) AddRelative(qr[r], k0, qs, p, first_of[r], len, row);
    float max = row[0];
    for (int64_t j = 1; j < len; ++j) max = std::max(max, row[j]);
    inv[r] = static_cast<float>(1.0 / internal::ExpShiftedAvx2(row, len, max, p.scale, row));
  }
}

// Columns [cb, d) of the `nr` rows' outputs, one at a time (a head_dim that
// is not a multiple of the vector loops' width).
void TailColumns(const float* sc, int64_t lp, const float* v0, int64_t qs, int64_t len, int64_t cb, int64_t nr,
                 const float* inv, float* out_row0, int64_t out_stride, int64_t d) {
  for (; cb < d; ++cb) {
    for (int64_t r = 0; r < nr; ++r) {
      float acc = 0;
      for (int64_t j = 0; j < len; ++j) acc = std::fma(sc[r * lp + j], v0[j * qs + cb], acc);
      out_row0[r * out_stride + cb] = acc * inv[r];
    }
  }
}

LLMHOST_ENC_AVX2 void Tile(const float* q, const float* k, const float* v, const EncoderSeq& s, int64_t h,
                           int64_t i0, int64_t i1, const EncoderAttentionParams& p, float* scratch, float* out) {
  const int64_t d = p.head_dim, len = s.len, lp = EncoderKeysPadded(len), qs = p.qkv_stride;
  const float* k0 = k + s.row * qs + h * d;  // the head's key j: k0 + j * qs
  const float* v0 = v + s.row * qs + h * d;
  float* kt = scratch;           // [d][lp], keys past len are 0
  float* sc = kt + d * lp;       // [kRows][lp] scores, then weights
  TransposeKeys(k0, qs, d, len, lp, kt);
  for (int64_t i = i0; i < i1; i += kRows) {
    const int64_t nr = std::min(kRows, i1 - i);
    const float* qr[kRows];
    int64_t first_of[kRows];
    for (int64_t r = 0; r < kRows; ++r) {
      first_of[r] = i + (r < nr ? r : 0);
      qr[r] = q + (s.row + first_of[r]) * qs + h * d;
    }
    // Raw scores q·k, 16 keys at a time (two registers a row: each q value
    // loaded once feeds two FMAs), over the columns in order.
    for (int64_t jb = 0; jb < lp; jb += 16) {
      __m256 lo[kRows], hi[kRows];
      for (int64_t r = 0; r < kRows; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
      for (int64_t c = 0; c < d; ++c) {
        const __m256 k_lo = _mm256_loadu_ps(kt + c * lp + jb), k_hi = _mm256_loadu_ps(kt + c * lp + jb + 8);
        for (int64_t r = 0; r < kRows; ++r) {
          const __m256 qv = _mm256_broadcast_ss(qr[r] + c);
          lo[r] = _mm256_fmadd_ps(qv, k_lo, lo[r]);
          hi[r] = _mm256_fmadd_ps(qv, k_hi, hi[r]);
        }
      }
      for (int64_t r = 0; r < kRows; ++r) {
        _mm256_storeu_ps(sc + r * lp + jb, lo[r]);
        _mm256_storeu_ps(sc + r * lp + jb + 8, hi[r]);
      }
    }
    // Softmax of scale · score per row (weights left unnormalized).
    float inv[kRows];
    SoftmaxRows(sc, kRows, lp, qr, k0, qs, p, first_of, len, inv);
    // out = Σ_j w_j v_j / Σ w, 16 columns at a time (then 8), keys in order.
    int64_t cb = 0;
    for (; cb + 16 <= d; cb += 16) {
      __m256 lo[kRows], hi[kRows];
      for (int64_t r = 0; r < kRows; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
      for (int64_t j = 0; j < len; ++j) {
        const __m256 v_lo = _mm256_loadu_ps(v0 + j * qs + cb), v_hi = _mm256_loadu_ps(v0 + j * qs + cb + 8);
        for (int64_t r = 0; r < kRows; ++r) {
          const __m256 w = _mm256_broadcast_ss(sc + r * lp + j);
          lo[r] = _mm256_fmadd_ps(w, v_lo, lo[r]);
          hi[r] = _mm256_fmadd_ps(w, v_hi, hi[r]);
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        float* o = out + (s.row + i + r) * p.out_stride + h * d + cb;
        _mm256_storeu_ps(o, _mm256_mul_ps(lo[r], _mm256_set1_ps(inv[r])));
        _mm256_storeu_ps(o + 8, _mm256_mul_ps(hi[r], _mm256_set1_ps(inv[r])));
      }
    }
    for (; cb + 8 <= d; cb += 8) {
      __m256 acc[kRows];
      for (int64_t r = 0; r < kRows; ++r) acc[r] = _mm256_setzero_ps();
      for (int64_t j = 0; j < len; ++j) {
        const __m256 vv = _mm256_loadu_ps(v0 + j * qs + cb);
        for (int64_t r = 0; r < kRows; ++r) acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(sc + r * lp + j), vv, acc[r]);
      }
      for (int64_t r = 0; r < nr; ++r) {
        _mm256_storeu_ps(out + (s.row + i + r) * p.out_stride + h * d + cb,
                         _mm256_mul_ps(acc[r], _mm256_set1_ps(inv[r])));
      }
    }
    TailColumns(sc, lp, v0, qs, len, cb, nr, inv, out + (s.row + i) * p.out_stride + h * d, p.out_stride, d);
  }
}

// The AVX-512 body: 8 query rows x 32 keys, then 8 rows x 32 columns, in
// the same per-row order of operations as Tile.
LLMHOST_ENC_AVX512 void Tile512(const float* q, const float* k, const float* v, const EncoderSeq& s, int64_t h,
                                int64_t i0, int64_t i1, const EncoderAttentionParams& p, float* scratch, float* out) {
  constexpr int64_t kR = 8;
  const int64_t d = p.head_dim, len = s.len, lp = EncoderKeysPadded(len), qs = p.qkv_stride;
  const float* k0 = k + s.row * qs + h * d;
  const float* v0 = v + s.row * qs + h * d;
  float* kt = scratch;      // [d][lp]
  float* sc = kt + d * lp;  // [kR][lp]
  TransposeKeys(k0, qs, d, len, lp, kt);
  for (int64_t i = i0; i < i1; i += kR) {
    const int64_t nr = std::min(kR, i1 - i);
    const float* qr[kR];
    int64_t first_of[kR];
    for (int64_t r = 0; r < kR; ++r) {
      first_of[r] = i + (r < nr ? r : 0);
      qr[r] = q + (s.row + first_of[r]) * qs + h * d;
    }
    for (int64_t jb = 0; jb < lp; jb += 32) {
      __m512 lo[kR], hi[kR];
      for (int64_t r = 0; r < kR; ++r) lo[r] = hi[r] = _mm512_setzero_ps();
      for (int64_t c = 0; c < d; ++c) {
        const __m512 k_lo = _mm512_loadu_ps(kt + c * lp + jb), k_hi = _mm512_loadu_ps(kt + c * lp + jb + 16);
        for (int64_t r = 0; r < kR; ++r) {
          const __m512 qv = _mm512_set1_ps(qr[r][c]);
          lo[r] = _mm512_fmadd_ps(qv, k_lo, lo[r]);
          hi[r] = _mm512_fmadd_ps(qv, k_hi, hi[r]);
        }
      }
      for (int64_t r = 0; r < kR; ++r) {
        _mm512_storeu_ps(sc + r * lp + jb, lo[r]);
        _mm512_storeu_ps(sc + r * lp + jb + 16, hi[r]);
      }
    }
    float inv[kR];
    SoftmaxRows(sc, kR, lp, qr, k0, qs, p, first_of, len, inv);
    int64_t cb = 0;
    for (; cb + 32 <= d; cb += 32) {
      __m512 lo[kR], hi[kR];
      for (int64_t r = 0; r < kR; ++r) lo[r] = hi[r] = _mm512_setzero_ps();
      for (int64_t j = 0; j < len; ++j) {
        const __m512 v_lo = _mm512_loadu_ps(v0 + j * qs + cb), v_hi = _mm512_loadu_ps(v0 + j * qs + cb + 16);
        for (int64_t r = 0; r < kR; ++r) {
          const __m512 w = _mm512_set1_ps(sc[r * lp + j]);
          lo[r] = _mm512_fmadd_ps(w, v_lo, lo[r]);
          hi[r] = _mm512_fmadd_ps(w, v_hi, hi[r]);
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        float* o = out + (s.row + i + r) * p.out_stride + h * d + cb;
        _mm512_storeu_ps(o, _mm512_mul_ps(lo[r], _mm512_set1_ps(inv[r])));
        _mm512_storeu_ps(o + 16, _mm512_mul_ps(hi[r], _mm512_set1_ps(inv[r])));
      }
    }
    TailColumns(sc, lp, v0, qs, len, cb, nr, inv, out + (s.row + i) * p.out_stride + h * d, p.out_stride, d);
  }
}

}  // namespace

EncoderTileFn EncoderTileAvx2() {
  const CpuIsa isa = ActiveCpuIsa();
  if (isa == CpuIsa::kScalar) return nullptr;
  return isa == CpuIsa::kAvx2 ? &Tile : &Tile512;
}

}  // namespace llmhost::cpu

#else

namespace llmhost::cpu {
EncoderTileFn EncoderTileAvx2() { return nullptr; }
}  // namespace llmhost::cpu

#endif
