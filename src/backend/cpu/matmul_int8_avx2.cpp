// The 8-bit-activation path for quantized weights (MatMulPrecision::kFastInt8),
// AVX2: activations quantized per 32 values to int8, integer dot products
// with the weights' codes (quant_int8_avx2.h), as ggml computes quantized
// matmuls on CPUs.
//
// Activations: for each row t and block b of 32 columns,
//   dx = max|x| / 127, xq_i = round(x_i * 127 / max|x|) in [-127, 127]
//   (stored in the weights' code order: natural, or MLX 4-bit's even/odd),
//   xs = Σ x_i (f32, exact inputs), xqo = o * (xq lane sums).
// Each output, whatever n and the tile it falls in:
//   acc (8 lanes) = 0; for b: p = madd(maddubs(q, xq)) (int32 lane m = values
//   4m..4m+3) - xqo; acc = fma(a * dx, f32(p), acc)
//   sc (8 lanes) = 0; for b in steps of 8: sc = fma(c'[b..b+8], xs[b..b+8], sc)
//   y = Sum8(acc) + Sum8(sc)
// Error: only the activations are rounded, by at most dx/2 each, so
// |y - y_exact| <= Σ_i |w_i| * dx_i / 2 (plus f32 rounding); about 0.5% of
// |y| for typical activations.
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/quant_int8_avx2.h"

#if defined(__x86_64__)

#include <algorithm>
#include <cmath>
#include <vector>

namespace llmhost::cpu {
namespace {

using int8::Block;

constexpr int64_t kBlockX = 64;  // x rows per pass over a weight row group (L2-sized)
// Rows ahead to prefetch: weight rows are streamed 4 at a time, and short
// rows (4-bit: ~1 KB) end before the hardware prefetcher ramps up.
constexpr int64_t kPrefetchRows = 8;

// Layout of the quantized activations in one buffer (K = cols, B = K / 32).
struct QxLayout {
  int64_t n, k, b;
  int64_t Bytes() const { return n * k + n * b * (4 + 4 + 32); }
  int8_t* Xq(void* base) const { return static_cast<int8_t*>(base); }
  float* Dx(void* base) const { return reinterpret_cast<float*>(static_cast<uint8_t*>(base) + n * k); }
  float* Xs(void* base) const { return Dx(base) + n * b; }
  int32_t* Xqo(void* base) const { return reinterpret_cast<int32_t*>(Xs(base) + n * b); }
};

// Needs cols % 32 == 0 (true of every quantized format).
int64_t QxBytes(const WeightMatrix& w, int64_t n) { return QxLayout{n, w.cols, w.cols / 32}.Bytes() + 64; }

void* Align64(void* p) {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
}

// ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
AVX2_FN inline float Sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

AVX2_FN void QuantizeRows(const float* x, int64_t n, int64_t cols, int offset, bool even_odd, int64_t t0,
                          int64_t t1, void* buf) {
  const QxLayout lay{n, cols, cols / 32};
  void* base = Align64(buf);
  int8_t* xq = lay.Xq(base);
  float* dx = lay.Dx(base);
  float* xs = lay.Xs(base);
  int32_t* xqo = lay.Xqo(base);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < lay.b; ++b) {
      const float* src = x + t * cols + 32 * b;
      const __m256 v0 = _mm256_loadu_ps(src), v1 = _mm256_loadu_ps(src + 8),
                   v2 = _mm256_loadu_ps(src + 16), v3 = _mm256_loadu_ps(src + 24);
      const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                     _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
      __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
      h = _mm_max_ps(h, _mm_movehl_ps(h, h));
      const float amax = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
      const int64_t i = t * lay.b + b;
      dx[i] = amax / 127.0f;
      const __m256 id = _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
      const __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id)), q1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id)),
                    q2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id)), q3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
      // int32 -> int8 in order (packs interleave 128-bit lanes; the permute undoes it).
      const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
      __m256i q = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      if (even_odd) {  // [x0 x2 .. x30 | x1 x3 .. x31]
        const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6,
                                               8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
        q = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(q, split), 0xD8);  // qwords 0, 2, 1, 3
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + t * cols + 32 * b), q);
      xs[i] = Sum8(_mm256_add_ps(_mm256_add_ps(v0, v1), _mm256_add_ps(v2, v3)));
      // Lane sums of xq (lane m = values 4m..4m+3), times the weights' offset.
      const __m256i lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(xqo + i * 8), _mm256_mullo_epi32(lanes, _mm256_set1_epi32(offset)));
    }
  }
}

template <typename Dec, int kT, int kR>
AVX2_FN void IntTile(const Dec& dec, void* base, const QxLayout& lay, int64_t t0, int64_t r0, float* cbuf,
                     float* y, int64_t ldy) {
  const int64_t k = lay.k, nb = lay.b;
  const int8_t* xq[kT];
  const float* dx[kT];
  const int32_t* xqo[kT];
#pragma GCC unroll 4
  for (int t = 0; t < kT; ++t) {
    xq[t] = lay.Xq(base) + (t0 + t) * k;
    dx[t] = lay.Dx(base) + (t0 + t) * nb;
    xqo[t] = lay.Xqo(base) + (t0 + t) * nb * 8;
  }
  const __m256i ones16 = _mm256_set1_epi16(1);
  __m256 acc[kT][kR];
#pragma GCC unroll 4
  for (int t = 0; t < kT; ++t) {
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) acc[t][r] = _mm256_setzero_ps();
  }
  const int64_t sub = dec.SubBlocks();
  for (int64_t sb = 0; sb < nb; sb += sub) {
    typename Dec::Header hdr[kR];
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
      dec.Prefetch(r0 + r + kPrefetchRows, 32 * sb);  // the row group after next
      hdr[r] = dec.Prepare(r0 + r, 32 * sb);
    }
    for (int j = 0; j < sub; ++j) {
      const int64_t b = sb + j;
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) {
        const Block blk = dec.Codes(hdr[r], j);
        if constexpr (Dec::kHasC) cbuf[r * nb + b] = blk.c;
        const __m256i qa = Dec::kSigned ? _mm256_sign_epi8(blk.q, blk.q) : blk.q;
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t) {
          __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + 32 * b));
          if constexpr (Dec::kSigned) xv = _mm256_sign_epi8(xv, blk.q);
          __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(qa, xv), ones16);
          if constexpr (Dec::kOffset != 0) {
            p = _mm256_sub_epi32(p, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xqo[t] + 8 * b)));
          }
          const __m256 s = _mm256_mul_ps(blk.a, _mm256_broadcast_ss(dx[t] + b));
          acc[t][r] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(p), acc[t][r]);
        }
      }
    }
  }
  const float* xs = lay.Xs(base);
#pragma GCC unroll 4
  for (int t = 0; t < kT; ++t) {
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
      float sc = 0.0f;
      if constexpr (Dec::kHasC) {  // Σ c'_b xs_b, 8 blocks per lane step
        const float* xst = xs + (t0 + t) * nb;
        const float* ct = cbuf + r * nb;
        __m256 v = _mm256_setzero_ps();
        int64_t b = 0;
        for (; b + 8 <= nb; b += 8) v = _mm256_fmadd_ps(_mm256_loadu_ps(ct + b), _mm256_loadu_ps(xst + b), v);
        if (b < nb) {
          const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nb - b)),
                                               _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
          v = _mm256_fmadd_ps(_mm256_maskload_ps(ct + b, m), _mm256_maskload_ps(xst + b, m), v);
        }
        sc = Sum8(v);
      }
      y[(t0 + t) * ldy + r0 + r] = Sum8(acc[t][r]) + sc;
    }
  }
}

template <typename Dec, int kT>
AVX2_FN void IntRowGroup(const Dec& dec, void* base, const QxLayout& lay, int64_t t0, int64_t r0, int64_t nr,
                         float* cbuf, float* y, int64_t ldy) {
  constexpr int kR = kT <= 2 ? 4 : 2;
  int64_t r = 0;
  for (; r + kR <= nr; r += kR) IntTile<Dec, kT, kR>(dec, base, lay, t0, r0 + r, cbuf, y, ldy);
  for (; r < nr; ++r) IntTile<Dec, kT, 1>(dec, base, lay, t0, r0 + r, cbuf, y, ldy);
}

template <typename Dec>
AVX2_FN void IntRows(const Dec& dec, void* base, const QxLayout& lay, int64_t r0, int64_t r1, float* y,
                     int64_t ldy) {
  static thread_local std::vector<float> cbuf;
  if (cbuf.size() < static_cast<size_t>(4 * lay.b)) cbuf.resize(4 * lay.b);
  for (int64_t tb = 0; tb < lay.n; tb += kBlockX) {
    const int64_t te = std::min(lay.n, tb + kBlockX);
    for (int64_t r = r0; r < r1; r += 4) {
      const int64_t nr = std::min<int64_t>(4, r1 - r);
      for (int64_t t = tb; t < te; t += 4) {
        switch (std::min<int64_t>(4, te - t)) {
          case 1: IntRowGroup<Dec, 1>(dec, base, lay, t, r, nr, cbuf.data(), y, ldy); break;
          case 2: IntRowGroup<Dec, 2>(dec, base, lay, t, r, nr, cbuf.data(), y, ldy); break;
          case 3: IntRowGroup<Dec, 3>(dec, base, lay, t, r, nr, cbuf.data(), y, ldy); break;
          default: IntRowGroup<Dec, 4>(dec, base, lay, t, r, nr, cbuf.data(), y, ldy); break;
        }
      }
    }
  }
}

bool Int8Supported(const WeightMatrix& w) {
  return int8::WithCodeDecoder(w, [](const auto&) {});
}

void Int8QuantizeX(const WeightMatrix& w, const float* x, int64_t n, int64_t t0, int64_t t1, void* qx) {
  int offset = 0;
  bool even_odd = false;
  int8::WithCodeDecoder(w, [&](const auto& dec) {
    offset = std::decay_t<decltype(dec)>::kOffset;
    even_odd = std::decay_t<decltype(dec)>::kEvenOdd;
  });
  QuantizeRows(x, n, w.cols, offset, even_odd, t0, t1, qx);
}

void Int8Rows(const WeightMatrix& w, void* qx, int64_t n, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  const QxLayout lay{n, w.cols, w.cols / 32};
  void* base = Align64(qx);
  int8::WithCodeDecoder(w, [&](const auto& dec) { IntRows(dec, base, lay, r0, r1, y, ldy); });
}

}  // namespace

const Int8Kernels* Avx2Int8Kernels() {
  static const Int8Kernels k = {Int8Supported, QxBytes, Int8QuantizeX, Int8Rows};
  return &k;
}

}  // namespace llmhost::cpu

#else  // not x86-64

namespace llmhost::cpu {
const Int8Kernels* Avx2Int8Kernels() { return nullptr; }
}  // namespace llmhost::cpu

#endif
