// Register-blocked int8 kernels (MatMulPrecision::kFastInt8) for MLX 4/8-bit
// and Q4_0 weights with cols a multiple of 128 (decoders, units and
// code orders in quant_int8_unit_avx2.h); other quantized formats and shapes
// take matmul_int8_avx2.cpp.
//
// Activations, per row t: int8 per 32-value block b as in matmul_int8_avx2.cpp
//   dx_b = max|x| / 127, xq_i = round(x_i / dx_b), xs_b = Σ x_i (f32)
// stored per unit u in the weights' code order (int16 for 8-bit weights), with
//   d8[u]: lane l = dx of Block(l);  e8[u]: lane l = -kOffsetQ * dx * Σ xq over
//   the values of lane l (the code offset of unsigned 4-bit codes);
//   xs[g] = Σ xs_b over the blocks of scale group g (MLX).
// With P_u the integer Dot of the unit and w8[u] the lanes' weight scales,
// every output is, in this order whatever n, tile or thread:
//   acc (8 lanes) = 0
//   for u: f = P_u * d8[u] + e8[u] (one FMA; 8-bit: P_u * d8[u]);
//          acc = fma(f, w8[u], acc)
//   (MLX) for each 8 groups c: acc = fma(C[c..c+8], xs[c..c+8], acc)
//         (C = bias + kOffsetX * scale; groups past the last are zero)
//   y = ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
// So each block contributes scale * dx * Σ (q - o) xq + (MLX) (bias + o * scale)
// * Σ x: the codes meet the rounded activations centred, as in
// matmul_int8_avx2.cpp (the same error bound, Σ |w_i| dx_i / 2).
//
// Decode (n = 1) runs tiles of 4 weight rows over whole rows, prefetching the
// rows two tiles ahead. Larger batches run tiles of 2 rows x 4 activation rows
// (4-bit) or 1 x 8 (8-bit: four int16 code registers per row) over blocks of
// 32 rows, in chunks of units whose activations fit the L1 (the 8-bit dot
// reads 160 bytes of activations per 64 products: from L2 it would be the
// bottleneck); accumulators wait in a small buffer between chunks.
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/quant_int8_unit_avx2.h"

#if defined(__x86_64__)

#include <algorithm>
#include <type_traits>
#include <vector>

namespace llmhost::cpu {
namespace {

using namespace int8u;  // NOLINT: the unit decoders

int64_t Round8(int64_t v) { return (v + 7) / 8 * 8; }

// The quantized activations of n rows in one buffer (U units of the
// decoder's kUnit columns, G8 = scale groups rounded up to 8).
struct UnitX {
  int64_t n = 0, units = 0, g8 = 0;
  int64_t unit_bytes = 0;  // kUnit (int8) or 2 * kUnit (int16)
  int8_t* xq = nullptr;    // [n][U][unit_bytes]
  float* d8 = nullptr;     // [n][U][8]  dx of each lane's block
  float* e8 = nullptr;     // [n][U][8]  -kOffsetQ * dx * Σ xq of each lane
  float* xs = nullptr;     // [n][G8]    Σ x per scale group (MLX)
  int8_t* Xq(int64_t t, int64_t u) const { return xq + (t * units + u) * unit_bytes; }
};

template <typename Dec>
constexpr int64_t UnitBytes() {
  return Dec::kFamily == Family::kWide ? 2 * Dec::kUnit : Dec::kUnit;
}

template <typename Dec>
int64_t QxBytesOf(const Dec& dec, int64_t n, int64_t cols) {
  const int64_t units = cols / Dec::kUnit;
  return n * units * (UnitBytes<Dec>() + 64) + n * Round8(dec.Groups()) * 4 + 64;
}

template <typename Dec>
UnitX Layout(const Dec& dec, int64_t n, int64_t cols, void* buf) {
  UnitX X;
  X.n = n;
  X.units = cols / Dec::kUnit;
  X.g8 = Round8(dec.Groups());
  X.unit_bytes = UnitBytes<Dec>();
  uint8_t* p = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf) + 63) & ~uintptr_t{63});
  X.xq = reinterpret_cast<int8_t*>(p);
  X.d8 = reinterpret_cast<float*>(p + n * X.units * X.unit_bytes);  // 64-byte aligned
  X.e8 = X.d8 + n * X.units * 8;
  X.xs = X.e8 + n * X.units * 8;
  return X;
}

// ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
AVX2_FN inline float Sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

struct QBlock {
  __m256i q;  // 32 codes, natural order
  float dx, xs;
};

// One block of 32 activations (the rounding of matmul_int8_avx2.cpp).
AVX2_FN inline QBlock QuantizeBlock(const float* src) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 v0 = _mm256_loadu_ps(src), v1 = _mm256_loadu_ps(src + 8), v2 = _mm256_loadu_ps(src + 16),
               v3 = _mm256_loadu_ps(src + 24);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  const float amax = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
  QBlock b;
  b.dx = amax / 127.0f;
  const __m256 id = _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
  const __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id)), q1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id)),
                q2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id)), q3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
  // int32 -> int8 in order (packs interleave 128-bit lanes; the permute undoes it).
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
  b.q = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  b.xs = Sum8(_mm256_add_ps(_mm256_add_ps(v0, v1), _mm256_add_ps(v2, v3)));
  return b;
}

// [evens | odds] of a 32-byte block (16 bytes each).
AVX2_FN inline __m256i EvensOdds(__m256i q) {
  const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10, 12,
                                         14, 1, 3, 5, 7, 9, 11, 13, 15);
  return _mm256_permute4x64_epi64(_mm256_shuffle_epi8(q, split), 0xD8);
}

// The unit's activations (blocks q[0..kUnit/32) in natural order) in the
// order of the decoder's codes; returns the lanes' Σ xq (for E8).
template <typename Dec>
AVX2_FN inline __m256i StoreUnit(const QBlock* b, int8_t* dst) {
  __m256i* d = reinterpret_cast<__m256i*>(dst);
  if constexpr (Dec::kFamily == Family::kWide) {
    const Wide w = Widen(b[0].q, b[1].q);
    for (int j = 0; j < 4; ++j) _mm256_store_si256(d + j, w.c[j]);
    return _mm256_setzero_si256();  // 8-bit codes are centred: no E8
  } else {
    // The registers that meet va's and vb's low nibbles (lo_a, lo_b) and
    // high nibbles (hi_a, hi_b), then Interleave as the codes.
    __m256i lo_a, hi_a, lo_b, hi_b;
    if constexpr (std::is_same_v<Dec, UnitMlx4>) {  // byte j: values 2j, 2j + 1
      const __m256i e0 = EvensOdds(b[0].q), e1 = EvensOdds(b[1].q), e2 = EvensOdds(b[2].q), e3 = EvensOdds(b[3].q);
      lo_a = _mm256_permute2x128_si256(e0, e1, 0x20);
      hi_a = _mm256_permute2x128_si256(e0, e1, 0x31);
      lo_b = _mm256_permute2x128_si256(e2, e3, 0x20);
      hi_b = _mm256_permute2x128_si256(e2, e3, 0x31);
    } else {  // Q4_0, byte j of a block: values j, j + 16
      lo_a = _mm256_permute2x128_si256(b[0].q, b[1].q, 0x20);
      hi_a = _mm256_permute2x128_si256(b[0].q, b[1].q, 0x31);
      lo_b = _mm256_permute2x128_si256(b[2].q, b[3].q, 0x20);
      hi_b = _mm256_permute2x128_si256(b[2].q, b[3].q, 0x31);
    }
    Nibbles x;
    Interleave(lo_a, lo_b, &x.c[0], &x.c[2]);
    Interleave(hi_a, hi_b, &x.c[1], &x.c[3]);
    for (int j = 0; j < 4; ++j) _mm256_store_si256(d + j, x.c[j]);
    const __m256i one = _mm256_set1_epi8(1);
    return Dot(Nibbles{{one, one, one, one}}, dst);
  }
}

template <typename Dec>
AVX2_FN void QuantizeUnitRows(const Dec& dec, const float* x, int64_t cols, const UnitX& X, int64_t t0,
                              int64_t t1) {
  constexpr int kBlocks = Dec::kUnit / 32;
  const int64_t groups = dec.Groups(), bpg = dec.BlocksPerGroup();
  static thread_local std::vector<float> xs;  // Σ x per block of the current row
  if (xs.size() < static_cast<size_t>(cols / 32)) xs.resize(cols / 32);
  for (int64_t t = t0; t < t1; ++t) {
    const float* row = x + t * cols;
    for (int64_t u = 0; u < X.units; ++u) {
      QBlock b[kBlocks];
      for (int i = 0; i < kBlocks; ++i) {
        b[i] = QuantizeBlock(row + Dec::kUnit * u + 32 * i);
        xs[kBlocks * u + i] = b[i].xs;
      }
      const __m256i lane_sums = StoreUnit<Dec>(b, X.Xq(t, u));
      __m256 d8;
      if constexpr (Dec::kFamily == Family::kWide) {
        d8 = _mm256_setr_ps(b[0].dx, b[0].dx, b[0].dx, b[0].dx, b[1].dx, b[1].dx, b[1].dx, b[1].dx);
      } else {
        d8 = _mm256_setr_ps(b[0].dx, b[0].dx, b[2].dx, b[2].dx, b[1].dx, b[1].dx, b[3].dx, b[3].dx);
      }
      const __m256 e8 = _mm256_mul_ps(_mm256_mul_ps(d8, _mm256_cvtepi32_ps(lane_sums)),
                                      _mm256_set1_ps(-static_cast<float>(Dec::kOffsetQ)));
      _mm256_store_ps(X.d8 + (t * X.units + u) * 8, d8);
      _mm256_store_ps(X.e8 + (t * X.units + u) * 8, e8);
    }
    float* xg = X.xs + t * X.g8;
    for (int64_t g = 0; g < groups; ++g) {
      float s = xs[g * bpg];
      for (int64_t j = 1; j < bpg; ++j) s += xs[g * bpg + j];
      xg[g] = s;
    }
    for (int64_t g = groups; g < X.g8; ++g) xg[g] = 0.0f;
  }
}

// Per-thread f32 scales S and constants C of a block of rows: [rows][G8 + 8]
// each (W8 loads 8 floats from any group), and accumulators.
// (Allocated for every format, so that row offsets never apply to null.)
struct RowParams {
  std::vector<float> s, c, acc;
  void Reserve(int64_t rows, int64_t sstride, int64_t kt) {
    const size_t need = static_cast<size_t>(rows * sstride);
    if (s.size() < need) {
      s.assign(need, 0.0f);
      c.assign(need, 0.0f);
    }
    if (acc.size() < static_cast<size_t>(rows * kt * 8)) acc.resize(rows * kt * 8);
  }
};

// acc[t][r] (8 lanes each, at acc + (r * kT + t) * 8) += units [u0, u1) of
// rows r0.. x activation rows t0..; zero first when `init`.
template <typename Dec, int kR, int kT, bool kPrefetch>
AVX2_FN void TileUnits(const Dec& dec, const UnitX& X, int64_t t0, int64_t r0, int64_t u0, int64_t u1,
                       const float* S, int64_t sstride, float* acc_mem, int64_t acc_stride, bool init,
                       int64_t prefetch_rows) {
  __m256 acc[kT][kR];
#pragma GCC unroll 8
  for (int t = 0; t < kT; ++t) {
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
      acc[t][r] = init ? _mm256_setzero_ps() : _mm256_loadu_ps(acc_mem + (r * acc_stride + t) * 8);
    }
  }
  for (int64_t u = u0; u < u1; ++u) {
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
      if constexpr (kPrefetch) dec.Prefetch(r0 + r + prefetch_rows, u);
      const typename Dec::Codes c = dec.Load(r0 + r, u);
      const __m256 w8 = dec.W8(r0 + r, u, S + r * sstride);
#pragma GCC unroll 8
      for (int t = 0; t < kT; ++t) {
        const int64_t i = (t0 + t) * X.units + u;
        const __m256 p = _mm256_cvtepi32_ps(Dot(c, X.xq + i * X.unit_bytes));
        __m256 f;
        if constexpr (Dec::kOffsetQ != 0) {
          f = _mm256_fmadd_ps(p, _mm256_load_ps(X.d8 + 8 * i), _mm256_load_ps(X.e8 + 8 * i));
        } else {
          f = _mm256_mul_ps(p, _mm256_load_ps(X.d8 + 8 * i));
        }
        acc[t][r] = _mm256_fmadd_ps(f, w8, acc[t][r]);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < kT; ++t) {
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) _mm256_storeu_ps(acc_mem + (r * acc_stride + t) * 8, acc[t][r]);
  }
}

// y for rows [r0, r0 + nr) x activation rows [t0, t0 + nt) from their
// accumulators: the per-group constants, then the lane sum.
template <typename Dec>
AVX2_FN void Finish(const UnitX& X, int64_t t0, int64_t nt, int64_t r0, int64_t nr, const float* C,
                    int64_t sstride, const float* acc_mem, int64_t acc_stride, float* y, int64_t ldy) {
  for (int64_t r = 0; r < nr; ++r) {
    for (int64_t t = 0; t < nt; ++t) {
      __m256 a = _mm256_loadu_ps(acc_mem + (r * acc_stride + t) * 8);
      if constexpr (Dec::kMlx) {  // Σ_g C[g] * xs[g], 8 groups per step
        const float* xs = X.xs + (t0 + t) * X.g8;
        for (int64_t g = 0; g < X.g8; g += 8) {
          a = _mm256_fmadd_ps(_mm256_loadu_ps(C + r * sstride + g), _mm256_loadu_ps(xs + g), a);
        }
      }
      y[(t0 + t) * ldy + r0 + r] = Sum8(a);
    }
  }
}

// Units [u0, u1) of rows [r0, r0 + nr) x activation rows [t0, t0 + tt):
// tiles of kR rows (the last ones one at a time), tt <= kT.
template <typename Dec, int kR, int kT, bool kPrefetch>
AVX2_FN void TileRange(const Dec& dec, const UnitX& X, int64_t t0, int64_t tt, int64_t r0, int64_t nr, int64_t u0,
                       int64_t u1, const float* S, int64_t sstride, float* acc, int64_t acc_stride, bool init,
                       int64_t prefetch_rows) {
  if constexpr (kT > 1) {
    if (tt < kT) {
      TileRange<Dec, kR, kT - 1, kPrefetch>(dec, X, t0, tt, r0, nr, u0, u1, S, sstride, acc, acc_stride, init,
                                            prefetch_rows);
      return;
    }
  }
  int64_t r = 0;
  for (; r + kR <= nr; r += kR) {
    TileUnits<Dec, kR, kT, kPrefetch>(dec, X, t0, r0 + r, u0, u1, S + r * sstride, sstride,
                                      acc + r * acc_stride * 8, acc_stride, init, prefetch_rows);
  }
  for (; r < nr; ++r) {
    TileUnits<Dec, 1, kT, kPrefetch>(dec, X, t0, r0 + r, u0, u1, S + r * sstride, sstride, acc + r * acc_stride * 8,
                                     acc_stride, init, prefetch_rows);
  }
}

// Rows [r0, r1) against every activation row. Blocks of kRowBlock rows (their
// weights stay in L2 while every activation tile passes); within a block,
// activation tiles of kT rows, each in chunks of units small enough for L1
// that all the block's rows run against before the next chunk.
// Accumulators wait in a per-thread buffer between chunks.
template <typename Dec, int kR, int kT>
AVX2_FN void RowsBlocked(const Dec& dec, const UnitX& X, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  constexpr int64_t kRowBlock = 32;
  static_assert(kR * kT <= 8, "tile too large");
  static thread_local RowParams params;
  const int64_t groups = dec.Groups(), sstride = X.g8 + 8;
  params.Reserve(kRowBlock, sstride, kT);
  float* S = params.s.data();
  float* C = params.c.data();
  float* acc = params.acc.data();  // [row][t][8]
  const int64_t chunk = std::max<int64_t>(1, (12 << 10) / (kT * (X.unit_bytes + 64)));
  // Decode (few activation rows): the weights come from DRAM once; prefetch
  // the next block's rows while this one runs.
  const bool small = X.n <= kT;
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    const int64_t nr = std::min(kRowBlock, r1 - rb);
    if constexpr (Dec::kMlx) {
      for (int64_t i = 0; i < nr; ++i) {
        dec.PrepRow(rb + i, S + i * sstride, C + i * sstride);
        for (int64_t g = groups; g < X.g8; ++g) C[i * sstride + g] = 0.0f;
      }
    }
    for (int64_t t = 0; t < X.n; t += kT) {
      const int64_t tt = std::min<int64_t>(kT, X.n - t);
      for (int64_t u0 = 0; u0 < X.units; u0 += chunk) {
        const int64_t u1 = std::min(X.units, u0 + chunk);
        if (small) {
          TileRange<Dec, kR, kT, true>(dec, X, t, tt, rb, nr, u0, u1, S, sstride, acc, kT, u0 == 0, kRowBlock);
        } else {
          TileRange<Dec, kR, kT, false>(dec, X, t, tt, rb, nr, u0, u1, S, sstride, acc, kT, u0 == 0, 0);
        }
      }
      Finish<Dec>(X, t, tt, rb, nr, C, sstride, acc, kT, y, ldy);
    }
  }
}

// One activation row (decode): tiles of 4 rows over whole rows, prefetching
// the rows two tiles ahead.
template <typename Dec>
AVX2_FN void RowsSingle(const Dec& dec, const UnitX& X, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  constexpr int kR = 4;
  constexpr int64_t kAhead = 8;
  static thread_local RowParams params;
  const int64_t groups = dec.Groups(), sstride = X.g8 + 8;
  params.Reserve(kR, sstride, 1);
  float* S = params.s.data();
  float* C = params.c.data();
  float* acc = params.acc.data();
  for (int64_t r = r0; r < r1; r += kR) {
    const int64_t nr = std::min<int64_t>(kR, r1 - r);
    if constexpr (Dec::kMlx) {
      for (int64_t i = 0; i < nr; ++i) {
        dec.PrefetchParams(r + i + kAhead);
        dec.PrepRow(r + i, S + i * sstride, C + i * sstride);
        for (int64_t g = groups; g < X.g8; ++g) C[i * sstride + g] = 0.0f;
      }
    }
    TileRange<Dec, kR, 1, true>(dec, X, 0, 1, r, nr, 0, X.units, S, sstride, acc, 1, true, kAhead);
    Finish<Dec>(X, 0, 1, r, nr, C, sstride, acc, 1, y, ldy);
  }
}

template <typename Dec>
AVX2_FN void UnitRowsOf(const Dec& dec, const UnitX& X, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  if (X.n == 1) {
    RowsSingle(dec, X, r0, r1, y, ldy);
  } else if constexpr (Dec::kFamily == Family::kWide) {
    RowsBlocked<Dec, 1, 8>(dec, X, r0, r1, y, ldy);
  } else {
    RowsBlocked<Dec, 2, 4>(dec, X, r0, r1, y, ldy);
  }
}

bool UnitSupported(const WeightMatrix& w) {
  return WithUnitDecoder(w, [](const auto&) {});
}

int64_t UnitQxBytes(const WeightMatrix& w, int64_t n) {
  int64_t bytes = 0;
  WithUnitDecoder(w, [&](const auto& dec) { bytes = QxBytesOf(dec, n, w.cols); });
  return bytes;
}

void UnitQuantizeX(const WeightMatrix& w, const float* x, int64_t n, int64_t t0, int64_t t1, void* qx) {
  WithUnitDecoder(w, [&](const auto& dec) {
    QuantizeUnitRows(dec, x, w.cols, Layout(dec, n, w.cols, qx), t0, t1);
  });
}

void UnitRows(const WeightMatrix& w, void* qx, int64_t n, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  WithUnitDecoder(w, [&](const auto& dec) { UnitRowsOf(dec, Layout(dec, n, w.cols, qx), r0, r1, y, ldy); });
}

}  // namespace

const Int8Kernels* Avx2Int8UnitKernels() {
  static const Int8Kernels k = {UnitSupported, UnitQxBytes, UnitQuantizeX, UnitRows};
  return &k;
}

}  // namespace llmhost::cpu

#else  // not x86-64

namespace llmhost::cpu {
const Int8Kernels* Avx2Int8UnitKernels() { return nullptr; }
}  // namespace llmhost::cpu

#endif
