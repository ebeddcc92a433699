#include <cuda_bf16.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/matmul_mma.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kWarps = 8;         // a block: 16 weight rows, the columns' steps dealt over 8 warps
constexpr int kRows = 16;         // the MMA's m
constexpr int kStepCols = 64;     // columns per step: each lane's two 16-byte loads of a row
constexpr int kMaxWeights = 4;
constexpr int64_t kMaxGridY = 65535;

struct MmaWeights {
  DevWeight w[kMaxWeights];
  float* y[kMaxWeights];
  int64_t first[kMaxWeights + 1];  // weight i's first block
  int count = 0;
};

// D += A · B, m16n8k16, bf16 in, f32 accumulate.
__device__ __forceinline__ void Mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                    uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t PackBf16(float lo_half, float hi_half) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo_half, hi_half);
  return *reinterpret_cast<const uint32_t*>(&p);
}

// The two bf16 terms of x0, x1 as packed pairs: hi = rn(x), lo = rn(x - hi).
__device__ __forceinline__ void SplitPair(float x0, float x1, uint32_t* hi, uint32_t* lo) {
  *hi = PackBf16(x0, x1);
  const __nv_bfloat162 h = *reinterpret_cast<const __nv_bfloat162*>(hi);
  *lo = PackBf16(x0 - __low2float(h), x1 - __high2float(h));
}

// x's 8 columns at p (16-byte aligned with XVec), or zeros for a padding token.
template <bool XVec>
__device__ __forceinline__ void LoadX8(const float* p, bool valid, float (&v)[8]) {
  if (!valid) {
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = 0.0f;
  } else if constexpr (XVec) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(p)), b = __ldg(reinterpret_cast<const float4*>(p) + 1);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = __ldg(p + j);
  }
}

// Two MMAs over one 16-byte chunk of rows g and g + 8 (wa, wb) and the same
// 8 columns of x: the chunk's columns 0-3 are k 2c, 2c+1, 2c+8, 2c+9 of the
// first, 4-7 of the second. With Split, the lo terms go to their own
// accumulator (a shorter dependency chain; the two are added at the end).
template <bool Split>
__device__ __forceinline__ void MmaChunk(const uint4& wa, const uint4& wb, const float (&xv)[8], float (&hi)[4],
                                         float (&lo)[4]) {
  uint32_t h[4], l[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if constexpr (Split) {
      SplitPair(xv[2 * j], xv[2 * j + 1], &h[j], &l[j]);
    } else {
      h[j] = PackBf16(xv[2 * j], xv[2 * j + 1]);
    }
  }
  Mma(hi, wa.x, wb.x, wa.y, wb.y, h[0], h[1]);
  Mma(hi, wa.z, wb.z, wa.w, wb.w, h[2], h[3]);
  if constexpr (Split) {
    Mma(lo, wa.x, wb.x, wa.y, wb.y, l[0], l[1]);
    Mma(lo, wa.z, wb.z, wa.w, wb.w, l[2], l[3]);
  }
}

// grid (Σ blocks, ceil(n / (8 NT))). Lane (g, c) = (lane / 4, lane % 4) loads
// columns [64 s + 16 c, +16) of rows r0 + g and r0 + g + 8 at step s (two
// 16-byte chunks: the four lanes of a row read one 128-byte line), and the
// same columns of its token g of each 8-token tile. The MMAs' k order is a
// permutation of those columns: a sum over k does not care, as long as A and
// B agree.
template <int NT, int U, bool Split, bool XVec>
__global__ void __launch_bounds__(kWarps * 32, 2) MmaRowsKernel(MmaWeights ws, const float* x, int64_t n) {
  int i = 0;
  while (i + 1 < ws.count && blockIdx.x >= ws.first[i + 1]) ++i;
  const DevWeight& w = ws.w[i];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const int64_t r0 = (blockIdx.x - ws.first[i]) * kRows, t0 = static_cast<int64_t>(blockIdx.y) * NT * 8;
  const int64_t cols = w.cols, steps = cols / kStepCols;
  const bool va = r0 + g < w.rows, vb = r0 + g + 8 < w.rows;
  const auto* rowa = reinterpret_cast<const uint4*>(static_cast<const char*>(w.data) + (va ? r0 + g : 0) * w.row_bytes);
  const auto* rowb = reinterpret_cast<const uint4*>(static_cast<const char*>(w.data) + (vb ? r0 + g + 8 : 0) * w.row_bytes);
  const float* xt[NT];
  bool tv[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const int64_t tok = t0 + t * 8 + g;
    tv[t] = tok < n;
    xt[t] = x + (tv[t] ? tok : 0) * cols + 16 * c;
  }
  float hi[NT][4], lo[NT][4];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int e = 0; e < 4; ++e) hi[t][e] = lo[t][e] = 0.0f;
  }

  for (int64_t base = 0; base < steps; base += kWarps * U) {
    uint4 wa[U][2], wb[U][2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t s = base + u * kWarps + warp;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        wa[u][h] = s < steps && va ? __ldg(rowa + s * 8 + 2 * c + h) : make_uint4(0, 0, 0, 0);
        wb[u][h] = s < steps && vb ? __ldg(rowb + s * 8 + 2 * c + h) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t s = base + u * kWarps + warp;
      if (s >= steps) break;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float xv[8];
          LoadX8<XVec>(xt[t] + s * kStepCols + 8 * h, tv[t], xv);
          MmaChunk<Split>(wa[u][h], wb[u][h], xv, hi[t], lo[t]);
        }
      }
    }
  }

  // The warps' partial sums, added in warp order by warp 0.
  __shared__ float part[kWarps - 1][NT][4][32];
  if (warp > 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) part[warp - 1][t][e][lane] = Split ? hi[t][e] + lo[t][e] : hi[t][e];
    }
  }
  __syncthreads();
  if (warp != 0) return;
  float* y = ws.y[i];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float v = Split ? hi[t][e] + lo[t][e] : hi[t][e];
#pragma unroll
      for (int k = 0; k < kWarps - 1; ++k) v += part[k][t][e][lane];
      // d0, d1: row g, tokens 2c, 2c + 1; d2, d3: row g + 8.
      const int64_t row = r0 + g + (e >= 2 ? 8 : 0), tok = t0 + t * 8 + 2 * c + (e & 1);
      if (row < w.rows && tok < n) y[tok * w.rows + row] = v;
    }
  }
}

template <int NT, int U, bool Split>
void Launch(const MmaWeights& ws, dim3 grid, const float* x, int64_t n, bool xvec, cudaStream_t s) {
  if (xvec) {
    MmaRowsKernel<NT, U, Split, true><<<grid, kWarps * 32, 0, s>>>(ws, x, n);
  } else {
    MmaRowsKernel<NT, U, Split, false><<<grid, kWarps * 32, 0, s>>>(ws, x, n);
  }
}

template <bool Split>
void LaunchTiles(const MmaWeights& ws, int64_t n, const float* x, bool xvec, cudaStream_t s) {
  // Tokens per block: the fewest 8-token tiles that hold n, up to 8 (bits do
  // not depend on it); loads in flight per lane fall as the tiles' registers grow.
  const int nt = n <= 8 ? 1 : n <= 16 ? 2 : n <= 32 ? 4 : 8;
  const int64_t per_block = nt * 8;
  const int64_t cols = ws.w[0].cols;
  for (int64_t t0 = 0; t0 < n; t0 += kMaxGridY * per_block) {
    const int64_t m = n - t0 < kMaxGridY * per_block ? n - t0 : kMaxGridY * per_block;
    MmaWeights part = ws;
    for (int k = 0; k < ws.count; ++k) part.y[k] = ws.y[k] + t0 * ws.w[k].rows;
    const dim3 grid(static_cast<unsigned>(ws.first[ws.count]), static_cast<unsigned>((m + per_block - 1) / per_block));
    const float* xs = x + t0 * cols;
    switch (nt) {
      case 1: Launch<1, 4, Split>(part, grid, xs, m, xvec, s); break;
      case 2: Launch<2, 4, Split>(part, grid, xs, m, xvec, s); break;
      case 4: Launch<4, 2, Split>(part, grid, xs, m, xvec, s); break;
      default: Launch<8, 1, Split>(part, grid, xs, m, xvec, s); break;
    }
  }
}

}  // namespace

bool MmaRows(const DevWeight& w) {
  return w.fmt == WFmt::kBF16 && w.cols % kStepCols == 0 && w.row_bytes % 16 == 0 &&
         (reinterpret_cast<uintptr_t>(w.data) & 15u) == 0;
}

void LaunchMmaMatMul(const DevWeight* w, float* const* y, int count, const float* x, int64_t n, bool split,
                     cudaStream_t s) {
  if (n <= 0 || count < 1 || count > kMaxWeights) return;
  MmaWeights ws;
  ws.count = count;
  ws.first[0] = 0;
  for (int k = 0; k < count; ++k) {
    ws.w[k] = w[k];
    ws.y[k] = y[k];
    ws.first[k + 1] = ws.first[k] + (w[k].rows + kRows - 1) / kRows;
  }
  // x rows are cols * 4 bytes apart, a multiple of 256 here: aligned rows when the first is.
  const bool xvec = (reinterpret_cast<uintptr_t>(x) & 15u) == 0;
  if (split) {
    LaunchTiles<true>(ws, n, x, xvec, s);
  } else {
    LaunchTiles<false>(ws, n, x, xvec, s);
  }
}

}  // namespace llmhost::cuda
