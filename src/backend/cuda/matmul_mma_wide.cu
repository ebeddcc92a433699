// bf16 generated rows for more than 8 tokens: the same sums as matmul_mma.cu's
// kernel, laid out for a batch. There, warp w of a block sums part w of the
// columns' steps (s = w, w + 8, ...) and the parts are added in order; each
// warp reads x for its own steps from L2 and splits it into bf16 terms
// itself, so at 32 tokens x's traffic and conversions outweigh the weight's
// (ncu: 12-19% occupancy, warps waiting on loads).
//
// Here the 8 row tiles of a block (128 rows; a warp each, or two each for
// 97 tokens and more: RowTilesFor) walk the same steps in the same order: x's columns of a step are read once, split into
// bf16 terms once and put in shared memory for all of them. A block walks
// its parts one after the other; a part's sum goes into the running sum in
// part order (v = p0, v += p1, ...): the same additions as the other kernel,
// so a token's bits are the same. Where 128-row blocks are too few to fill
// the GPU, PG blocks of a cluster each take 8 / PG of the parts, keep each
// part's sum in shared memory, and after a cluster barrier add them in part
// order, each block for its share of the row tiles, reading the others'
// sums through distributed shared memory.
#include <cooperative_groups.h>

#include <cstdlib>
#include <cstring>

#include "backend/cuda/common.cuh"
#include "backend/cuda/env_switch.h"
#include "backend/cuda/load_streamed.cuh"
#include "backend/cuda/matmul_mma.cuh"
#include "backend/cuda/mma_rows.cuh"

namespace llmhost::cuda::mma_rows {
namespace {

namespace cg = cooperative_groups;

constexpr int kTiles = 8;  // row tiles a block: a warp each

// A block's steps in order: part `part`'s (part, part + 8, ...), then the next part's.
struct Cursor {
  int part;
  int64_t step;
  __device__ explicit Cursor(int first_part) : part(first_part), step(first_part) {}
  __device__ void Next(int64_t steps) {
    step += kParts;
    if (step >= steps) step = ++part;
  }
};

// RT row tiles a warp (kTiles / RT warps a block): each x fragment read from
// shared memory feeds RT MMAs; every row tile's sums are the same MMAs in the
// same order whatever RT is.
template <int NT, int RT>
struct Layout {
  static constexpr int kWarps = kTiles / RT;
  // x's step, split: [stage][token tile][chunk][hi, lo][lane], 16 bytes each.
  static constexpr int kStageWords = NT * 2 * 2 * 32;  // uint4
  static constexpr int kPieces = NT * 8 * 16;          // x's 16-byte pieces a step
  static constexpr int kPiecesPerThread = kPieces / (kWarps * 32);
  static_assert(kPieces % (kWarps * 32) == 0, "every thread stages whole pieces");
  // A part's sums: [part of the block][warp][token tile][lane], 4 floats each.
  static constexpr int kPartWords = kTiles * NT * 32;  // float4
  // With a ring (Ring > 0 steps), each row tile's weight rows of those steps:
  // [stage][tile][row][chunk], chunks swizzled (a warp's RT tiles side by side).
  static constexpr int kRingWords = kTiles * kRows * 8;  // uint4 a stage
  static constexpr size_t Bytes(int pg, int ring) {
    return 2 * kStageWords * 16 + static_cast<size_t>(ring) * kRingWords * 16 +
           (pg > 1 ? static_cast<size_t>(kParts / pg) * kPartWords * 16 : 0);
  }
};

// grid (ceil(n / (8 NT)), Σ 128-row blocks, PG), clusters of (1, 1, PG):
// block z of a cluster takes parts [z 8 / PG, (z + 1) 8 / PG). Lane (g, c)
// of warp r holds rows g and g + 8 of row tiles r RT .. r RT + RT - 1, each
// as in matmul_mma.cu.
template <int NT, int PG, bool Split, int Ring, int RT>
__global__ void __launch_bounds__(kTiles / RT * 32, RT == 1 ? 2 : 3)
    MmaWideKernel(MmaWeights ws, const float* x, int64_t n, bool early) {
  using L = Layout<NT, RT>;
  constexpr int kThreads = L::kWarps * 32;
  if (!early) WaitForPriorGrid();
  const int i = WeightOf(ws, blockIdx.y);
  const DevWeight& w = ws.w[i];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const int64_t rb = (blockIdx.y - ws.first[i]) * kRows * kTiles, t0 = int64_t{blockIdx.x} * NT * 8;
  const int64_t cols = w.cols, steps = cols / kStepCols;
  constexpr int kMine = kParts / PG;  // parts this block sums
  const int first_part = static_cast<int>(blockIdx.z) * kMine;
  int64_t count = 0;  // this block's steps
  for (int p = first_part; p < first_part + kMine; ++p) count += (steps - p + kParts - 1) / kParts;

  const uint4* row[RT][2];
  bool rv[RT][2];
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t r = rb + (warp * RT + rt) * kRows + g + 8 * half;
      rv[rt][half] = r < w.rows;
      row[rt][half] =
          reinterpret_cast<const uint4*>(static_cast<const char*>(w.data) + (rv[rt][half] ? r : 0) * w.row_bytes);
    }
  }
  using Words = uint4[RT][2][2];  // [tile][row g / g + 8][chunk]
  auto load = [&](int64_t s, Words& wv) {
#pragma unroll
    for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
#pragma unroll
        for (int ch = 0; ch < 2; ++ch) {
          wv[rt][half][ch] =
              rv[rt][half] ? LoadStreamed(row[rt][half] + s * 8 + ChunkOf(c, ch)) : make_uint4(0, 0, 0, 0);
        }
      }
    }
  };

  extern __shared__ uint4 smem[];
  uint4* xs = smem;  // two stages
  uint4* ring = smem + 2 * L::kStageWords + warp * RT * kRows * 8;  // this warp's rows, stage 0 (with a ring)
  float4* sums = reinterpret_cast<float4*>(smem + 2 * L::kStageWords + Ring * L::kRingWords);
  // With a ring: a step's 16 rows x 8 chunks of each of this warp's tiles by its 32 lanes, 4
  // each a tile (8 lanes a 128-byte line); chunk q of row r sits at q ^ (r % 8), so
  // that the lanes reading chunks 2c + ch of rows g, g + 8 hit distinct banks.
  auto copy_w = [&](int stage, int64_t s) {
#pragma unroll
    for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int piece = q * 32 + lane, r = piece >> 3, chunk = piece & 7;
        const int64_t gr = rb + (warp * RT + rt) * kRows + r;
        const bool ok = gr < w.rows;
        CopyAsync16(ring + stage * L::kRingWords + (rt * kRows + r) * 8 + (chunk ^ (r & 7)),
                    static_cast<const char*>(w.data) + (ok ? gr : 0) * w.row_bytes + s * kStepCols * 2 + chunk * 16,
                    ok);
      }
    }
  };
  auto ring_words = [&](int stage, Words& wv) {
#pragma unroll
    for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = g + 8 * half;
#pragma unroll
        for (int ch = 0; ch < 2; ++ch) {
          wv[rt][half][ch] = ring[stage * L::kRingWords + (rt * kRows + r) * 8 + (ChunkOf(c, ch) ^ (r & 7))];
        }
      }
    }
  };
  // x's pieces: a token's 256 bytes of the step by 16 consecutive threads.
  // Piece j of token tl holds columns 4j .. 4j + 3 of the step: words
  // 2 (j % 2), +1 of the terms of chunk j / 2, which lane (tl % 8, c) reads.
  float4 xr[L::kPiecesPerThread];
  auto read_x = [&](int64_t s) {
#pragma unroll
    for (int q = 0; q < L::kPiecesPerThread; ++q) {
      const int p = threadIdx.x + q * kThreads, tl = p >> 4, j = p & 15;
      const int64_t tok = t0 + tl;
      xr[q] = tok < n ? __ldg(reinterpret_cast<const float4*>(x + tok * cols + s * kStepCols) + j)
                      : make_float4(0, 0, 0, 0);
    }
  };
  auto put_x = [&](int stage) {
#pragma unroll
    for (int q = 0; q < L::kPiecesPerThread; ++q) {
      const int p = threadIdx.x + q * kThreads, tl = p >> 4, j = p & 15;
      const int q8 = j >> 1;  // the step's 8-column chunk: lane c's chunk ch (ChunkOf)
      const int cc = ChunkLane(q8), ch = ChunkHalf(q8);
      const int ln = (tl & 7) * 4 + cc, word = 2 * (j & 1);
      uint4* at = xs + stage * L::kStageWords + (((tl >> 3) * 2 + ch) * 2) * 32 + ln;
      uint32_t h[2], l[2];
      if constexpr (Split) {
        SplitPair(xr[q].x, xr[q].y, &h[0], &l[0]);
        SplitPair(xr[q].z, xr[q].w, &h[1], &l[1]);
        reinterpret_cast<uint2*>(at + 32)[word / 2] = make_uint2(l[0], l[1]);
      } else {
        h[0] = PackBf16(xr[q].x, xr[q].y);
        h[1] = PackBf16(xr[q].z, xr[q].w);
      }
      reinterpret_cast<uint2*>(at)[word / 2] = make_uint2(h[0], h[1]);
    }
  };

  Words wa, wb;
  Cursor at_w(first_part);  // the next step whose weights to load
  if constexpr (Ring > 0) {
#pragma unroll
    for (int k = 0; k < Ring - 1; ++k) {
      if (k < count) copy_w(k, at_w.step);
      at_w.Next(steps);
      CopyAsyncCommit();
    }
  } else {
    load(at_w.step, wa);
    at_w.Next(steps);
    if (count > 1) load(at_w.step, wb);
    at_w.Next(steps);
  }
  if (early) WaitForPriorGrid();
  Cursor at_x(first_part);  // the next step of x to read
  read_x(at_x.step);
  at_x.Next(steps);
  put_x(0);
  if (count > 1) read_x(at_x.step);
  at_x.Next(steps);

  float acc[RT][NT][4], v[RT][NT][4];
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[rt][t][e] = v[rt][t][e] = 0.0f;
    }
  }
  Cursor at(first_part);  // the step summed now
  // Step k of the block's order: its x is in stage k % 2, its weights in wv.
  auto step = [&](int64_t k, Words& wv) {
    if constexpr (Ring > 0) CopyAsyncWait<Ring - 2>();  // this thread's copies of step k's weights
    __syncthreads();  // step k's x (and weights) are in; every warp is done with step k - 1's stages
    if constexpr (Ring > 0) {
      if (k + Ring - 1 < count) copy_w(static_cast<int>((k + Ring - 1) % Ring), at_w.step);
      at_w.Next(steps);
      CopyAsyncCommit();
      ring_words(static_cast<int>(k % Ring), wv);
    }
    if (k + 1 < count) put_x(static_cast<int>((k + 1) & 1));
    if (k + 2 < count) {
      read_x(at_x.step);
      at_x.Next(steps);
    }
    const uint4* st = xs + (k & 1) * L::kStageWords;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
#pragma unroll
      for (int ch = 0; ch < 2; ++ch) {
        const uint4 hv = st[((t * 2 + ch) * 2) * 32 + lane];
        const uint32_t h[4] = {hv.x, hv.y, hv.z, hv.w};
        uint32_t l[4] = {0, 0, 0, 0};
        if constexpr (Split) {
          const uint4 lv = st[((t * 2 + ch) * 2 + 1) * 32 + lane];
          l[0] = lv.x, l[1] = lv.y, l[2] = lv.z, l[3] = lv.w;
        }
#pragma unroll
        for (int rt = 0; rt < RT; ++rt) MmaChunk<Split>(wv[rt][0][ch], wv[rt][1][ch], h, l, acc[rt][t]);
      }
    }
    if (at.step + kParts >= steps) {  // the part's last step
#pragma unroll
      for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          if constexpr (PG == 1) {  // into the running sum, in part order
#pragma unroll
            for (int e = 0; e < 4; ++e) v[rt][t][e] = at.part == 0 ? acc[rt][t][e] : v[rt][t][e] + acc[rt][t][e];
          } else {
            sums[((at.part - first_part) * kTiles + warp * RT + rt) * L::kPartWords / kTiles + t * 32 + lane] =
                make_float4(acc[rt][t][0], acc[rt][t][1], acc[rt][t][2], acc[rt][t][3]);
          }
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[rt][t][e] = 0.0f;
        }
      }
    }
    at.Next(steps);
    if (Ring == 0 && k + 2 < count) {
      load(at_w.step, wv);
      at_w.Next(steps);
    }
  };
  for (int64_t k = 0; k < count; k += 2) {
    step(k, wa);
    if (k + 1 < count) step(k + 1, wb);
  }
  if constexpr (Ring > 0) CopyAsyncWait<0>();

  float* y = ws.y[i];
  auto store = [&](int tile, int t, const float (&vt)[4]) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      // d0, d1: row g, tokens 2c, 2c + 1; d2, d3: row g + 8.
      const int64_t r = rb + tile * kRows + g + (e >= 2 ? 8 : 0), tok = t0 + t * 8 + 2 * c + (e & 1);
      if (r < w.rows && tok < n) y[tok * w.rows + r] = vt[e];
    }
  };
  if constexpr (PG == 1) {
#pragma unroll
    for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
      for (int t = 0; t < NT; ++t) store(warp * RT + rt, t, v[rt][t]);
    }
  } else {
    // Every part's sums are in the cluster's shared memory; block z adds
    // them up for row tiles z, z + PG, ..., reading each part where it is.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    const int z = static_cast<int>(cluster.block_rank());
    for (int tile = z; tile < kTiles; tile += PG) {
      if (warp != ((tile - z) / PG) % L::kWarps) continue;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        float vt[4];
#pragma unroll
        for (int p = 0; p < kParts; ++p) {
          const float4* there = cluster.map_shared_rank(sums, p / kMine);
          const float4 s = there[((p % kMine) * kTiles + tile) * L::kPartWords / kTiles + t * 32 + lane];
          if (p == 0) {
            vt[0] = s.x, vt[1] = s.y, vt[2] = s.z, vt[3] = s.w;
          } else {
            vt[0] += s.x, vt[1] += s.y, vt[2] += s.z, vt[3] += s.w;
          }
        }
        store(tile, t, vt);
      }
    }
    cluster.sync();  // no block leaves while another reads its sums
#else
    __trap();  // clusters are Hopper's: LaunchWide declines older GPUs
#endif
  }
}

bool WideEnabled() {
  return EnvSwitch("LLMHOST_CUDA_MMA_WIDE", true);
}

// Launches of fewer blocks than this (LLMHOST_CUDA_WIDE_CLUSTER_BELOW, default
// 128) deal their parts over clusters of 8 (with the ring).
int64_t ClusterBelow() {
  const char* v = std::getenv("LLMHOST_CUDA_WIDE_CLUSTER_BELOW");
  return v == nullptr ? kMinBlocks : std::atoll(v);
}

// Weights through a cp.async ring in shared memory (4 steps a warp, 3 of
// them in flight, no registers held; 3 steps with two row tiles a warp) unless LLMHOST_CUDA_WIDE_ASYNC=off (each warp's
// next step in registers): 32 sequences +4-7% on an H100.
bool AsyncWeights() {
  return EnvSwitch("LLMHOST_CUDA_WIDE_ASYNC", true);
}

// Row tiles a warp for 32-token blocks: 2 (four warps a block, two 16-row
// tiles each: each x fragment read from shared memory feeds two MMAs; three
// blocks an SM with a 3-step ring and no cluster, two with clusters' part
// sums) from kTwoTilesFrom tokens, else 1.
// LLMHOST_CUDA_WIDE_ROW_TILES=1|2 and LLMHOST_CUDA_WIDE_RING=3|4 override
// them (for A/Bs). On an H100, two tiles and the 3-step ring against the
// default: 32 sequences -6%, 64 +0.2%, 128 +3.7% and +5.9% (one round each).
constexpr int64_t kTwoTilesFrom = 97;  // four token blocks of 32
int RowTilesFor(int64_t n) {
  const char* v = std::getenv("LLMHOST_CUDA_WIDE_ROW_TILES");
  if (v != nullptr && std::strcmp(v, "1") == 0) return 1;
  if (v != nullptr && std::strcmp(v, "2") == 0) return 2;
  return n >= kTwoTilesFrom ? 2 : 1;
}
int RingFor(int row_tiles) {
  const char* v = std::getenv("LLMHOST_CUDA_WIDE_RING");
  if (v != nullptr && std::strcmp(v, "3") == 0) return 3;
  if (v != nullptr && std::strcmp(v, "4") == 0) return 4;
  return row_tiles == 2 ? 3 : 4;
}

template <int NT, int PG, bool Split, int Ring, int RT = 1>
void LaunchPg(dim3 grid, MmaWeights ws, int64_t n, const float* x, cudaStream_t s) {
  auto kernel = MmaWideKernel<NT, PG, Split, Ring, RT>;
  const size_t smem = Layout<NT, RT>::Bytes(PG, Ring);
  // Each launch: the attribute is a device's (several GPUs in one process).
  if (smem > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  grid.z = PG;
  LaunchPdlCluster(kernel, grid, dim3(Layout<NT, RT>::kWarps * 32), smem, dim3(1, 1, PG), s, ws, x, n,
                   EarlyWeightLoadsEnabled());
}

template <int NT, int PG, bool Split>
void LaunchRing(dim3 grid, MmaWeights ws, int64_t n, const float* x, cudaStream_t s) {
  const int row_tiles = NT == 4 ? RowTilesFor(n) : 1, ring = RingFor(row_tiles);
  if constexpr (NT == 4) {
    if (row_tiles == 2) {
      ring == 3 ? LaunchPg<NT, PG, Split, 3, 2>(grid, ws, n, x, s) : LaunchPg<NT, PG, Split, 4, 2>(grid, ws, n, x, s);
      return;
    }
  }
  ring == 3 ? LaunchPg<NT, PG, Split, 3>(grid, ws, n, x, s) : LaunchPg<NT, PG, Split, 4>(grid, ws, n, x, s);
}

template <int NT, bool Split>
void Launch(MmaWeights ws, int64_t n, const float* x, cudaStream_t s) {
  const int64_t token_tiles = (n + NT * 8 - 1) / (NT * 8);
  ws.first[0] = 0;
  for (int k = 0; k < ws.count; ++k) ws.first[k + 1] = ws.first[k] + (ws.w[k].rows + kRows * kTiles - 1) / (kRows * kTiles);
  const dim3 grid(static_cast<unsigned>(token_tiles), static_cast<unsigned>(ws.first[ws.count]));
  // The fewest groups of parts (up to 4) that give 256 blocks: on an H100,
  // against 128 blocks 32 sequences measured 1% slower and 128 sequences 11%
  // faster; against up to 8 groups, the same (bench/gpu/batch_ab.sh).
  const int64_t blocks = token_tiles * ws.first[ws.count];
  if (AsyncWeights()) {
    // One group where the blocks fill the GPU, else 8 (two 96 KiB blocks an
    // SM). On an H100 at 32 sequences, 8 groups for those launches measured
    // 2.9% faster than 4; rings of 6 and 8 steps 6-16% slower than 4.
    if (blocks < ClusterBelow()) {
      LaunchRing<NT, 8, Split>(grid, ws, n, x, s);
    } else {
      LaunchRing<NT, 1, Split>(grid, ws, n, x, s);
    }
    return;
  }
  int pg = 1;
  while (pg < 4 && blocks * pg < 2 * kMinBlocks) pg *= 2;
  switch (pg) {
    case 1: LaunchPg<NT, 1, Split, 0>(grid, ws, n, x, s); break;
    case 2: LaunchPg<NT, 2, Split, 0>(grid, ws, n, x, s); break;
    default: LaunchPg<NT, 4, Split, 0>(grid, ws, n, x, s); break;
  }
}

}  // namespace

bool LaunchWide(MmaWeights ws, int64_t n, const float* x, bool split, cudaStream_t s) {
  // x's rows are cols * 4 bytes apart (a multiple of 256): 16-byte pieces
  // when the first row is aligned.
  // Clusters are Hopper's: older GPUs keep the first kernel (the same sums).
  if ((reinterpret_cast<uintptr_t>(x) & 15u) != 0 || !WideEnabled() || !HopperOrNewer()) return false;
  for (int k = 0; k < ws.count; ++k) {
    if (ws.w[k].cols / kStepCols < kParts) return false;  // every part at least one step
  }
  // 16 or 32 tokens a block. Measured on an H100 and not kept: 64-token
  // blocks (one weight read for twice the tokens: 128 sequences 3,684 ->
  // 3,388 tok/s) and 2-8 tokens here (8 sequences 1,118 -> 1,048).
  if (n <= 16) {
    split ? Launch<2, true>(ws, n, x, s) : Launch<2, false>(ws, n, x, s);
  } else {
    split ? Launch<4, true>(ws, n, x, s) : Launch<4, false>(ws, n, x, s);
  }
  return true;
}

}  // namespace llmhost::cuda::mma_rows
