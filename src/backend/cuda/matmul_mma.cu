#include "backend/cuda/common.cuh"
#include "backend/cuda/env_switch.h"
#include "backend/cuda/load_streamed.cuh"
#include "backend/cuda/matmul_mma.cuh"
#include "backend/cuda/matmul_mma_mlx.cuh"
#include "backend/cuda/mma_bf16.cuh"
#include "backend/cuda/mma_rows.cuh"

namespace llmhost::cuda {
using namespace mma_rows;
namespace {

constexpr int kWarps = kParts;  // a block: 16 weight rows, warp w the columns' part w

// grid (ceil(n / (8 NT)), Σ blocks): a block takes RT tiles of 16 rows and NT
// tiles of 8 tokens. Warp w takes the steps s = w, w + 8, ... of every row
// tile: lane (g, c) = (lane / 4, lane % 4) loads columns [64 s + 16 c, +16)
// of rows g and g + 8 of each row tile (two 16-byte chunks: the four lanes of
// a row read one 128-byte line) and the same columns of its token g of each
// token tile, converted once for the RT row tiles (x is read from L2 once
// per block: more row tiles per block, less x traffic per weight byte). The
// MMAs' k order is a permutation of those columns: a sum over k does not
// care, as long as A and B agree. A token's sum is the same whatever NT, RT
// and U are: each warp's steps in order, then the warps in order.
// With Pipe, a warp loads its next U steps' weights before it sums the
// current ones (two register buffers): the same sums in the same order.
// With Streamed, weights are loaded past L1 (read once; L1 keeps x).
// With `early`, a warp's first weight loads go out before it waits for the
// kernel before it (weights are never written by a step: only x is), so they
// are in flight while that kernel finishes.
template <int NT, int RT, int U, bool Split, bool XVec, bool Pipe, bool Streamed = false>
__global__ void __launch_bounds__(kWarps * 32, RT >= 4 || (Pipe && NT * RT >= 8) ? 1 : 2)
    MmaRowsKernel(MmaWeights ws, const float* x, int64_t n, bool early) {
  if (!early) WaitForPriorGrid();
  const int i = WeightOf(ws, blockIdx.y);
  const DevWeight& w = ws.w[i];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const int64_t r0 = (blockIdx.y - ws.first[i]) * kRows * RT, t0 = static_cast<int64_t>(blockIdx.x) * NT * 8;
  const int64_t cols = w.cols, steps = cols / kStepCols;
  const uint4* row[RT][2];
  bool rv[RT][2];
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t r = r0 + rt * kRows + g + 8 * half;
      rv[rt][half] = r < w.rows;
      row[rt][half] = reinterpret_cast<const uint4*>(static_cast<const char*>(w.data) + (rv[rt][half] ? r : 0) * w.row_bytes);
    }
  }
  const float* xt[NT];
  bool tv[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const int64_t tok = t0 + t * 8 + g;
    tv[t] = tok < n;
    xt[t] = x + (tv[t] ? tok : 0) * cols + ChunkCols(c, 0);
  }
  float acc[RT][NT][4];
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[rt][t][0] = acc[rt][t][1] = acc[rt][t][2] = acc[rt][t][3] = 0.0f;
  }

  using Words = uint4[U][RT][2][2];  // [step][row tile][row g / g + 8][chunk]
  auto load = [&](int64_t base, Words& wv) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t s = base + u * kWarps + warp;
#pragma unroll
      for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
#pragma unroll
          for (int ch = 0; ch < 2; ++ch) {
            const uint4* p = row[rt][half] + s * 8 + ChunkOf(c, ch);
            wv[u][rt][half][ch] = !(s < steps && rv[rt][half]) ? make_uint4(0, 0, 0, 0)
                                  : Streamed                   ? LoadStreamed(p)
                                                               : __ldg(p);
          }
        }
      }
    }
  };
  auto sum = [&](int64_t base, const Words& wv) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t s = base + u * kWarps + warp;
      if (s >= steps) break;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
#pragma unroll
        for (int ch = 0; ch < 2; ++ch) {
          float xv[8];
          LoadX8<XVec>(xt[t] + s * kStepCols + ChunkCols(0, ch), tv[t], xv);
          uint32_t h[4], l[4];
          SplitX8<Split>(xv, h, l);
#pragma unroll
          for (int rt = 0; rt < RT; ++rt) MmaChunk<Split>(wv[u][rt][0][ch], wv[u][rt][1][ch], h, l, acc[rt][t]);
        }
      }
    }
  };
  constexpr int64_t kStride = kWarps * U;
  if constexpr (Pipe) {
    Words wa, wb;
    load(0, wa);
    if (early) WaitForPriorGrid();
    for (int64_t base = 0; base < steps; base += 2 * kStride) {
      load(base + kStride, wb);
      sum(base, wa);
      if (base + kStride >= steps) break;
      load(base + 2 * kStride, wa);
      sum(base + kStride, wb);
    }
  } else {
    Words wv;
    load(0, wv);
    if (early) WaitForPriorGrid();
    for (int64_t base = 0; base < steps; base += kStride) {
      if (base > 0) load(base, wv);
      sum(base, wv);
    }
  }

  // The warps' partial sums, added in warp order by warp 0, a row tile at a time.
  __shared__ float part[kWarps - 1][NT][4][32];
  float* y = ws.y[i];
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
    if (rt > 0) __syncthreads();  // warp 0 has read the last tile's partials
    if (warp > 0) {
#pragma unroll
      for (int t = 0; t < NT; ++t) {
#pragma unroll
        for (int e = 0; e < 4; ++e) part[warp - 1][t][e][lane] = acc[rt][t][e];
      }
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
      for (int t = 0; t < NT; ++t) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float v = acc[rt][t][e];
#pragma unroll
          for (int k = 0; k < kWarps - 1; ++k) v += part[k][t][e][lane];
          // d0, d1: row g, tokens 2c, 2c + 1; d2, d3: row g + 8.
          const int64_t r = r0 + rt * kRows + g + (e >= 2 ? 8 : 0), tok = t0 + t * 8 + 2 * c + (e & 1);
          if (r < w.rows && tok < n) y[tok * w.rows + r] = v;
        }
      }
    }
  }
}

// Tile shapes by n: the fewest 8-token tiles that hold n (up to 4: 32 tokens
// a block, more blocks side by side in x so that they share the weight's
// reads in L2), as many row tiles (x read once for them) where enough
// blocks remain, and fewer steps in flight as the tiles' registers grow.
// One tile of 8 tokens and 16 rows takes one step at a time, its weights
// past L1 (LoadStreamed): bf16 decode b1 151.4 -> 160.8 tok/s and 8
// sequences 1,004 -> 1,124 on an H100 against 4 steps through __ldg (4 steps
// past L1: 144.5; 2 steps: 161.0 past L1, 160.0 through it).
template <bool Split, bool XVec>
void LaunchShape(MmaWeights ws, int64_t n, const float* x, cudaStream_t s) {
  const int nt = n <= 8 ? 1 : n <= 16 ? 2 : 4;
  const int64_t token_tiles = (n + nt * 8 - 1) / (nt * 8);
  int64_t rows = 0;
  for (int k = 0; k < ws.count; ++k) rows += ws.w[k].rows;
  // Fewer row tiles where that leaves too few blocks to fill the GPU (a
  // 4,096-row weight in 64-row blocks is 64 blocks).
  int rt = nt;
  while (rt > 1 && token_tiles * (rows / (kRows * rt)) < kMinBlocks) rt /= 2;
  ws.first[0] = 0;
  for (int k = 0; k < ws.count; ++k) ws.first[k + 1] = ws.first[k] + (ws.w[k].rows + kRows * rt - 1) / (kRows * rt);
  const dim3 grid(static_cast<unsigned>(token_tiles), static_cast<unsigned>(ws.first[ws.count]));
  // Pipelined loads (opt-in): half the steps a buffer, two buffers (U does
  // not change the sums).
  const int shape = nt * 8 + rt + (MmaPipelineEnabled() ? 64 : 0);
  const bool early = EarlyWeightLoadsEnabled();
  constexpr int kT = kWarps * 32;
  switch (shape) {
    case 1 * 8 + 1: LaunchPdl(MmaRowsKernel<1, 1, 1, Split, XVec, false, true>, grid, kT, 0, s, ws, x, n, early); break;
    case 2 * 8 + 1: LaunchPdl(MmaRowsKernel<2, 1, 4, Split, XVec, false>, grid, kT, 0, s, ws, x, n, early); break;
    case 2 * 8 + 2: LaunchPdl(MmaRowsKernel<2, 2, 2, Split, XVec, false>, grid, kT, 0, s, ws, x, n, early); break;
    case 4 * 8 + 1: LaunchPdl(MmaRowsKernel<4, 1, 2, Split, XVec, false>, grid, kT, 0, s, ws, x, n, early); break;
    case 4 * 8 + 2: LaunchPdl(MmaRowsKernel<4, 2, 1, Split, XVec, false>, grid, kT, 0, s, ws, x, n, early); break;
    case 4 * 8 + 4: LaunchPdl(MmaRowsKernel<4, 4, 1, Split, XVec, false>, grid, kT, 0, s, ws, x, n, early); break;
    case 64 + 1 * 8 + 1: LaunchPdl(MmaRowsKernel<1, 1, 2, Split, XVec, true>, grid, kT, 0, s, ws, x, n, early); break;
    case 64 + 2 * 8 + 1: LaunchPdl(MmaRowsKernel<2, 1, 2, Split, XVec, true>, grid, kT, 0, s, ws, x, n, early); break;
    case 64 + 2 * 8 + 2: LaunchPdl(MmaRowsKernel<2, 2, 1, Split, XVec, true>, grid, kT, 0, s, ws, x, n, early); break;
    case 64 + 4 * 8 + 1: LaunchPdl(MmaRowsKernel<4, 1, 1, Split, XVec, true>, grid, kT, 0, s, ws, x, n, early); break;
    case 64 + 4 * 8 + 2: LaunchPdl(MmaRowsKernel<4, 2, 1, Split, XVec, true>, grid, kT, 0, s, ws, x, n, early); break;
    default: LaunchPdl(MmaRowsKernel<4, 4, 1, Split, XVec, true>, grid, kT, 0, s, ws, x, n, early); break;
  }
}

}  // namespace

// MLX rows on the tensor cores unless LLMHOST_CUDA_MLX_MMA=off (read at each
// choice, so a test or a speed comparison can turn it off without a rebuild).
bool MmaPipelineEnabled() {
  return EnvSwitch("LLMHOST_CUDA_MMA_PIPELINE", false);
}

bool EarlyWeightLoadsEnabled() {
  return EnvSwitch("LLMHOST_CUDA_EARLY_WEIGHTS", true);
}

bool MlxMmaEnabled() {
  return EnvSwitch("LLMHOST_CUDA_MLX_MMA", true);
}

bool MmaRows(const DevWeight& w) {
  if (w.fmt == WFmt::kMlx) return MlxMmaEnabled() && MmaMlxRows(w);
  return w.fmt == WFmt::kBF16 && w.cols % kStepCols == 0 && w.row_bytes % 16 == 0 &&
         (reinterpret_cast<uintptr_t>(w.data) & 15u) == 0;
}

bool MmaFusable(const DevWeight& a, const DevWeight& b) {
  return MmaRows(a) && MmaRows(b) && a.fmt == b.fmt && a.cols == b.cols &&
         (a.fmt != WFmt::kMlx || (a.bits == b.bits && a.group_size == b.group_size));
}

int64_t MmaTermsBytes(const DevWeight* w, int count, int64_t n, bool split) {
  if (w[0].fmt != WFmt::kBF16) return 0;
  const int64_t wgmma = WgmmaTermsBytes(w, count, n, split);
  return wgmma > 0 ? wgmma : GemmTermsBytes(w, count, n, split);
}

void LaunchMmaMatMul(const DevWeight* w, float* const* y, int count, const float* x, int64_t n, bool split,
                     cudaStream_t s, uint16_t* terms) {
  if (n <= 0 || count < 1 || count > kMaxWeights) return;
  if (w[0].fmt == WFmt::kMlx) {
    LaunchMmaMlxMatMul(w, y, count, x, n, split, s);
    return;
  }
  MmaWeights ws;
  ws.count = count;
  for (int k = 0; k < count; ++k) {
    ws.w[k] = w[k];
    ws.y[k] = y[k];
  }
  if (terms != nullptr && LaunchWgmmaGemm(ws, n, x, terms, split, s)) return;
  if (n > 8 && terms != nullptr && LaunchGemm(ws, n, x, terms, split, s)) return;
  if (n > 8 && LaunchWide(ws, n, x, split, s)) return;
  // x rows are cols * 4 bytes apart, a multiple of 256 here: aligned rows when the first is.
  const bool xvec = (reinterpret_cast<uintptr_t>(x) & 15u) == 0;
  if (split) {
    xvec ? LaunchShape<true, true>(ws, n, x, s) : LaunchShape<true, false>(ws, n, x, s);
  } else {
    xvec ? LaunchShape<false, true>(ws, n, x, s) : LaunchShape<false, false>(ws, n, x, s);
  }
}

}  // namespace llmhost::cuda
