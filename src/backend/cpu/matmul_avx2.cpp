// AVX2 + FMA f32 GEMM micro-kernels in the canonical order of
// matmul_kernels.h: each output owns one 8-lane accumulator that walks k in
// steps of 8. A tile of up to 4 rows of x by 3 rows of W keeps 12
// accumulators in registers (plus 3 weight vectors: 15 of 16 ymm); x comes
// straight from memory as the FMA's operand.
#include "backend/cpu/matmul_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

namespace llmhost::cpu {
namespace {

// Lanes [0, rem) set.
AVX2_FN inline __m256i TailMask(int64_t rem) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <int kT, int kR>
AVX2_FN inline void Tile(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t kc,
                         float* acc, int64_t acc_ld, bool init) {
  __m256 a[kT][kR];
#pragma GCC unroll 4
  for (int t = 0; t < kT; ++t) {
#pragma GCC unroll 3
    for (int r = 0; r < kR; ++r) {
      a[t][r] = init ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + (t * acc_ld + r) * 8);
    }
  }
  int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    __m256 wv[kR];
#pragma GCC unroll 3
    for (int r = 0; r < kR; ++r) wv[r] = _mm256_loadu_ps(w + r * ldw + k);
#pragma GCC unroll 4
    for (int t = 0; t < kT; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + t * ldx + k);
#pragma GCC unroll 3
      for (int r = 0; r < kR; ++r) a[t][r] = _mm256_fmadd_ps(wv[r], xv, a[t][r]);
    }
  }
  if (k < kc) {  // masked last step: absent lanes add 0 * 0
    const __m256i m = TailMask(kc - k);
    __m256 wv[kR];
#pragma GCC unroll 3
    for (int r = 0; r < kR; ++r) wv[r] = _mm256_maskload_ps(w + r * ldw + k, m);
#pragma GCC unroll 4
    for (int t = 0; t < kT; ++t) {
      const __m256 xv = _mm256_maskload_ps(x + t * ldx + k, m);
#pragma GCC unroll 3
      for (int r = 0; r < kR; ++r) a[t][r] = _mm256_fmadd_ps(wv[r], xv, a[t][r]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < kT; ++t) {
#pragma GCC unroll 3
    for (int r = 0; r < kR; ++r) _mm256_storeu_ps(acc + (t * acc_ld + r) * 8, a[t][r]);
  }
}

template <int kT>
AVX2_FN inline void TileRows(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t nw,
                             int64_t kc, float* acc, int64_t acc_ld, bool init) {
  int64_t r = 0;
  for (; r + 3 <= nw; r += 3) Tile<kT, 3>(x, ldx, w + r * ldw, ldw, kc, acc + r * 8, acc_ld, init);
  if (nw - r == 2) Tile<kT, 2>(x, ldx, w + r * ldw, ldw, kc, acc + r * 8, acc_ld, init);
  if (nw - r == 1) Tile<kT, 1>(x, ldx, w + r * ldw, ldw, kc, acc + r * 8, acc_ld, init);
}

AVX2_FN void GemmChunk(const float* x, int64_t ldx, int64_t nx, const float* w, int64_t ldw,
                       int64_t nw, int64_t kc, float* acc, int64_t acc_ld, bool init) {
  int64_t t = 0;
  for (; t + 4 <= nx; t += 4) {
    TileRows<4>(x + t * ldx, ldx, w, ldw, nw, kc, acc + t * acc_ld * 8, acc_ld, init);
  }
  float* a = acc + t * acc_ld * 8;
  switch (nx - t) {
    case 3: TileRows<3>(x + t * ldx, ldx, w, ldw, nw, kc, a, acc_ld, init); break;
    case 2: TileRows<2>(x + t * ldx, ldx, w, ldw, nw, kc, a, acc_ld, init); break;
    case 1: TileRows<1>(x + t * ldx, ldx, w, ldw, nw, kc, a, acc_ld, init); break;
    default: break;
  }
}

// ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
AVX2_FN inline float Sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

AVX2_FN void Reduce(const float* acc, int64_t nx, int64_t nw, int64_t acc_ld, float* y,
                    int64_t ldy) {
  for (int64_t t = 0; t < nx; ++t) {
    for (int64_t r = 0; r < nw; ++r) y[t * ldy + r] = Sum8(_mm256_loadu_ps(acc + (t * acc_ld + r) * 8));
  }
}

const FastKernels kAvx2 = {"avx2", SelectDequantAvx2, GemmChunk, Reduce};

}  // namespace

const FastKernels* Avx2Kernels() { return &kAvx2; }

}  // namespace llmhost::cpu

#else  // not x86-64

namespace llmhost::cpu {
const FastKernels* Avx2Kernels() { return nullptr; }
}  // namespace llmhost::cpu

#endif
