// AVX2 + FMA matmul kernels in the canonical order of matmul_kernels.h.
//
// Small batches (n <= 8, decode): FusedTile streams a few weight rows once,
// decoding 8 or 32 weights at a time in registers, and runs every row of x
// (up to 4 at a time) against them; the rows' bytes are read from memory once
// (a second group of 4 x rows re-reads them from L1/L2).
//
// Large batches (prefill): x is packed once into tiles of 4 rows x 8 columns
// per step ([chunk][tile][step][4][8]); each task dequantizes a panel of 24
// weight rows, one chunk of 256 columns at a time, into tiles of 3 rows
// ([tile][step][3][8]) and runs the 4x3 micro-kernel (12 accumulators, 3
// weight vectors, x from memory: 15 of 16 ymm) over all x tiles, carrying each
// output's 8-lane accumulator across chunks in a per-thread buffer.
#include "backend/cpu/aligned_scratch.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/quant_avx2_decode.h"

#if defined(__x86_64__)

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace llmhost::cpu {
namespace {

using namespace avx2;  // NOLINT: the decoders

constexpr int64_t kTileT = 4;      // x rows per micro-tile
constexpr int64_t kTileR = 3;      // weight rows per micro-tile
constexpr int64_t kPanel = 24;     // weight rows per panel (8 tiles)
constexpr int64_t kChunk = 256;    // columns per chunk (a multiple of every block)
constexpr int64_t kBlockT = 256;   // x rows per accumulator block (a multiple of 4)
constexpr int64_t kMaxFusedN = 8;
constexpr int64_t kPrefetchRows = 8;  // small batches: prefetch the rows two groups ahead

// ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
AVX2_FN inline float Sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// Lanes [0, rem) set.
AVX2_FN inline __m256i TailMask(int64_t rem) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// --- small batches --------------------------------------------------------------

template <typename Dec, int kT, int kR>
AVX2_FN void FusedTile(const Dec& dec, const float* x, int64_t ldx, int64_t cols, int64_t r0,
                       float* y, int64_t ldy) {
  constexpr int kLanes = Dec::kStep / 8;
  __m256 acc[kT][kR];
  for (int t = 0; t < kT; ++t) {
    for (int r = 0; r < kR; ++r) acc[t][r] = _mm256_setzero_ps();
  }
  const int64_t full = Dec::kPlain ? cols / 8 * 8 : cols;
  for (int64_t k = 0; k < full; k += Dec::kStep) {
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
      __m256 v[kLanes];
      dec.Prefetch(r0 + r + kPrefetchRows, k);  // short rows end before the hardware prefetcher ramps up
      dec.Load(r0 + r, k, v);
#pragma GCC unroll 4
      for (int j = 0; j < kLanes; ++j) {
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t) {
          acc[t][r] = _mm256_fmadd_ps(v[j], _mm256_loadu_ps(x + t * ldx + k + 8 * j), acc[t][r]);
        }
      }
    }
  }
  if constexpr (Dec::kPlain) {
    if (full < cols) {
      const __m256i mask = TailMask(cols - full);
      for (int r = 0; r < kR; ++r) {
        __m256 v[1];
        dec.LoadTail(r0 + r, full, cols - full, v);
        for (int t = 0; t < kT; ++t) {
          acc[t][r] = _mm256_fmadd_ps(v[0], _mm256_maskload_ps(x + t * ldx + full, mask), acc[t][r]);
        }
      }
    }
  }
  for (int t = 0; t < kT; ++t) {
    for (int r = 0; r < kR; ++r) y[t * ldy + r0 + r] = Sum8(acc[t][r]);
  }
}

// Rows [r0, r0 + nr) (nr <= 4) against kT rows of x; more weight rows per
// pass when fewer x rows leave registers free.
template <typename Dec, int kT>
AVX2_FN void FusedRowGroup(const Dec& dec, const float* x, int64_t ldx, int64_t cols, int64_t r0,
                           int64_t nr, float* y, int64_t ldy) {
  constexpr int kR = kT == 1 ? 4 : kT == 2 ? 3 : 2;
  int64_t r = 0;
  for (; r + kR <= nr; r += kR) FusedTile<Dec, kT, kR>(dec, x, ldx, cols, r0 + r, y, ldy);
  for (; r < nr; ++r) FusedTile<Dec, kT, 1>(dec, x, ldx, cols, r0 + r, y, ldy);
}

template <typename Dec>
AVX2_FN void FusedRows(const Dec& dec, const float* x, int64_t n, int64_t cols, int64_t r0,
                       int64_t r1, float* y, int64_t ldy) {
  for (int64_t r = r0; r < r1; r += 4) {
    const int64_t nr = std::min<int64_t>(4, r1 - r);
    for (int64_t t = 0; t < n; t += kTileT) {
      const float* xt = x + t * cols;
      float* yt = y + t * ldy;
      switch (std::min<int64_t>(kTileT, n - t)) {
        case 1: FusedRowGroup<Dec, 1>(dec, xt, cols, cols, r, nr, yt, ldy); break;
        case 2: FusedRowGroup<Dec, 2>(dec, xt, cols, cols, r, nr, yt, ldy); break;
        case 3: FusedRowGroup<Dec, 3>(dec, xt, cols, cols, r, nr, yt, ldy); break;
        default: FusedRowGroup<Dec, 4>(dec, xt, cols, cols, r, nr, yt, ldy); break;
      }
    }
  }
}

void Fused(const WeightMatrix& w, const float* x, int64_t n, int64_t r0, int64_t r1, float* y,
           int64_t ldy) {
  WithDecoder(w, [&](const auto& dec) { FusedRows(dec, x, n, w.cols, r0, r1, y, ldy); });
}

// --- large batches ----------------------------------------------------------------

int64_t Round8(int64_t v) { return (v + 7) / 8 * 8; }
int64_t TilesOf(int64_t n) { return (n + kTileT - 1) / kTileT; }

int64_t PackedXFloats(int64_t n, int64_t cols) { return TilesOf(n) * kTileT * Round8(cols); }

// Element (t, k) of packed x: chunk c = k / kChunk (width kcp = its columns
// rounded up to 8) at c * kChunk * n4; tile i = t / 4 at i * 4 * kcp; then
// step (k % kChunk) / 8 at 32 floats each, row t % 4 at 8, lane k % 8.
void PackX(const float* x, int64_t n, int64_t cols, int64_t i0, int64_t i1, float* xp) {
  const int64_t n4 = TilesOf(n) * kTileT, k8 = Round8(cols);
  for (int64_t c0 = 0; c0 < k8; c0 += kChunk) {
    const int64_t kcp = std::min(kChunk, k8 - c0);
    for (int64_t i = i0; i < i1; ++i) {
      float* tile = xp + c0 * n4 + i * kTileT * kcp;
      for (int64_t t = 0; t < kTileT; ++t) {
        const int64_t row = i * kTileT + t;
        const float* src = x + row * cols + c0;
        for (int64_t k = 0; k < kcp; k += 8) {
          float* dst = tile + (k / 8) * 32 + t * 8;
          const int64_t have = row < n ? std::clamp<int64_t>(cols - c0 - k, 0, 8) : 0;
          if (have == 8) {
            std::memcpy(dst, src + k, 8 * sizeof(float));  // fixed size: two moves
          } else {
            for (int64_t l = 0; l < 8; ++l) dst[l] = l < have ? src[k + l] : 0.0f;
          }
        }
      }
    }
  }
}

AVX2_FN inline void Kernel4x3(const float* xt, const float* wt, int64_t steps, float* acc, bool init) {
  __m256 a[4][3];
  for (int t = 0; t < 4; ++t) {
    for (int r = 0; r < 3; ++r) a[t][r] = init ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + (t * 3 + r) * 8);
  }
  for (int64_t s = 0; s < steps; ++s) {
    const __m256 w0 = _mm256_loadu_ps(wt + s * 24), w1 = _mm256_loadu_ps(wt + s * 24 + 8),
                 w2 = _mm256_loadu_ps(wt + s * 24 + 16);
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      const __m256 xv = _mm256_loadu_ps(xt + s * 32 + t * 8);
      a[t][0] = _mm256_fmadd_ps(w0, xv, a[t][0]);
      a[t][1] = _mm256_fmadd_ps(w1, xv, a[t][1]);
      a[t][2] = _mm256_fmadd_ps(w2, xv, a[t][2]);
    }
  }
  for (int t = 0; t < 4; ++t) {
    for (int r = 0; r < 3; ++r) _mm256_storeu_ps(acc + (t * 3 + r) * 8, a[t][r]);
  }
}

thread_local AlignedScratch<float> tls_panel, tls_acc;

// Dequantizes rows [r0, r0 + nr) x columns [c0, c0 + kc) into tiles of 3
// rows: wp[tile][step][3][8], zero past nr rows (to a multiple of 3) and past
// kc columns (to a multiple of 8).
template <typename Dec>
AVX2_FN void PackPanel(const Dec& dec, int64_t r0, int64_t nr, int64_t c0, int64_t kc, float* wp) {
  constexpr int kLanes = Dec::kStep / 8;
  const int64_t steps = Round8(kc) / 8, tiles = (nr + kTileR - 1) / kTileR;
  for (int64_t rr = 0; rr < tiles * kTileR; ++rr) {
    float* base = wp + (rr / kTileR) * steps * 24 + (rr % kTileR) * 8;
    if (rr >= nr) {
      for (int64_t s = 0; s < steps; ++s) _mm256_storeu_ps(base + s * 24, _mm256_setzero_ps());
      continue;
    }
    __m256 v[kLanes];
    int64_t k = 0;
    for (; k + Dec::kStep <= kc; k += Dec::kStep) {
      dec.Load(r0 + rr, c0 + k, v);
      for (int j = 0; j < kLanes; ++j) _mm256_storeu_ps(base + (k / 8 + j) * 24, v[j]);
    }
    if constexpr (Dec::kPlain) {
      if (k < kc) {
        dec.LoadTail(r0 + rr, c0 + k, kc - k, v);
        _mm256_storeu_ps(base + (k / 8) * 24, v[0]);
      }
    }
  }
}

template <typename Dec>
AVX2_FN void PanelRows(const Dec& dec, const float* xp, int64_t n, int64_t cols, int64_t r0,
                       int64_t r1, float* y, int64_t ldy) {
  const int64_t n4 = TilesOf(n) * kTileT, k8 = Round8(cols);
  const int64_t nr = r1 - r0, wtiles = (nr + kTileR - 1) / kTileR;
  float* wp = tls_panel.Get(kPanel * kChunk);
  float* acc = tls_acc.Get((kBlockT / kTileT) * (kPanel / kTileR) * 96);
  for (int64_t tb = 0; tb < n4; tb += kBlockT) {
    const int64_t xtiles = std::min(kBlockT, n4 - tb) / kTileT;
    for (int64_t c0 = 0; c0 < cols; c0 += kChunk) {
      const int64_t kc = std::min(kChunk, cols - c0), kcp = std::min(kChunk, k8 - c0);
      PackPanel(dec, r0, nr, c0, kc, wp);
      const float* chunk = xp + c0 * n4 + tb * kcp;
      for (int64_t i = 0; i < xtiles; ++i) {
        for (int64_t j = 0; j < wtiles; ++j) {
          Kernel4x3(chunk + i * kTileT * kcp, wp + j * (kcp / 8) * 24, kcp / 8,
                    acc + (i * (kPanel / kTileR) + j) * 96, c0 == 0);
        }
      }
    }
    for (int64_t i = 0; i < xtiles; ++i) {
      for (int64_t t = 0; t < kTileT; ++t) {
        const int64_t row = tb + i * kTileT + t;
        if (row >= n) break;
        for (int64_t r = 0; r < nr; ++r) {
          const float* a = acc + (i * (kPanel / kTileR) + r / kTileR) * 96 + (t * kTileR + r % kTileR) * 8;
          y[row * ldy + r0 + r] = Sum8(_mm256_loadu_ps(a));
        }
      }
    }
  }
}

void Panel(const WeightMatrix& w, const float* xp, int64_t n, int64_t r0, int64_t r1, float* y,
           int64_t ldy) {
  WithDecoder(w, [&](const auto& dec) { PanelRows(dec, xp, n, w.cols, r0, r1, y, ldy); });
}

const FastKernels kAvx2 = {
    "avx2", SelectDequantAvx2, kMaxFusedN, Fused, kTileT, PackedXFloats, PackX, kPanel, Panel,
};

}  // namespace

const FastKernels* Avx2Kernels() { return &kAvx2; }

}  // namespace llmhost::cpu

#else  // not x86-64

namespace llmhost::cpu {
const FastKernels* Avx2Kernels() { return nullptr; }
}  // namespace llmhost::cpu

#endif
