// bf16 generated rows for a large batch (97 tokens and more by default): the
// same sums as matmul_mma.cu's kernel, laid out as a GEMM. The wide kernel
// (matmul_mma_wide.cu) gives each warp 16-32 rows and all of a block's 32
// tokens, so at 128 tokens every weight byte is read four times and each MMA
// costs more shared-memory reads than the MMA itself (ncu: 16-23% of DRAM,
// 4-5x from the mma.sync bound).
//
// Here a block holds a tile of 64-256 weight rows by 64 or 128 tokens, and
// each warp 32-128 rows by 32 tokens, so a fragment of x read from shared
// memory feeds 2-8 MMAs and a fragment of the weight 4. The sums keep the
// first kernel's order: the columns' 64-column steps are dealt over 8 parts
// (part p: steps p, p + 8, ...), each part's MMAs start from zero and run in
// step order (a step's chunks and terms as MmaChunk adds them), and the parts
// are added in part order (v = p0, v += p1, ...). Two ways to walk them:
//  - a block walks every part in turn (the default), keeping the part's sums
//    and the parts' running total in registers: all of the columns' steps
//    through one ring, no reduction between blocks;
//  - block z of a cluster of 8 sums part z; after a cluster barrier each block
//    adds the 8 parts of 16 of the tile's tokens, reading the others' sums
//    through distributed shared memory (LLMHOST_CUDA_GEMM_PARTS=cluster: at
//    K = 4,096 a block gets only 8 steps, measured slower than the wide kernel).
// x is split into its bf16 terms once (SplitTermsKernel, the same SplitPair
// as the other kernels), so weights and both terms come into a ring of
// shared-memory stages by cp.async alone.
#include <cooperative_groups.h>

#include <cstdlib>
#include <cstring>

#include "backend/cuda/common.cuh"
#include "backend/cuda/matmul_mma.cuh"
#include "backend/cuda/mma_rows.cuh"

namespace llmhost::cuda::mma_rows {
namespace {

namespace cg = cooperative_groups;

// WT warps over the tile's tokens (32 each) and 2 over its rows, RT row
// tiles of 16 a warp (the block's rows: 2 RT 16), Stages steps in the ring,
// Split: x as two bf16 terms, Whole: a block walks every part (else one part
// a block of a cluster of 8, WT = 4 only).
template <int WT, int RT, int Stages, bool Split, bool Whole>
struct GemmLayout {
  static constexpr int kThreads = 64 * WT;
  static constexpr int kTokens = 32 * WT;
  static constexpr int kReduceTokens = kTokens / kParts;  // the tokens each block of a cluster adds up
  static constexpr int kRowsBlock = 2 * RT * kRows;
  static constexpr int kTerms = Split ? 2 : 1;
  // A stage, in 16-byte words: the weight's rows of the step, then each term
  // of x's tokens; [row or token][chunk], chunk q of row r at q ^ (r % 8).
  static constexpr int kWWords = kRowsBlock * 8;
  static constexpr int kXWords = kTerms * kTokens * 8;
  static constexpr int kStageWords = kWWords + kXWords;
  // A cluster's part sums after the ring: [token][row], rows padded by 4
  // floats so that a warp's fragment stores hit 32 banks.
  static constexpr int kSumStride = kRowsBlock + 4;
  static constexpr size_t kRingBytes = static_cast<size_t>(Stages) * kStageWords * 16;
  static constexpr size_t kSumBytes = Whole ? 0 : static_cast<size_t>(kTokens) * kSumStride * 4;
  static constexpr size_t kBytes = kRingBytes > kSumBytes ? kRingBytes : kSumBytes;
  // Blocks an SM the registers should allow: a whole walk holds two sets of
  // sums (the part's and the total).
  static constexpr int kMinBlocks = Whole ? (WT == 4 ? 1 : RT == 4 ? 2 : 3) : (RT == 4 && Stages == 2) ? 2 : 1;
  static_assert(kBytes <= 227 * 1024, "a block's shared memory");
  static_assert(kWWords % kThreads == 0 && kXWords % kThreads == 0, "whole copies a thread");
  static_assert(Whole || WT == 4, "a cluster's reduction deals 128 tokens over 8 blocks");
};

// The steps of `steps` (≥ 8) a whole walk takes, in order: part 0's (0, 8,
// 16, ...), then part 1's, ...; j-th of them: its step, part, and whether it
// is its part's last.
struct WalkStep {
  int64_t step;
  int part;
  bool last;
};
__device__ __forceinline__ WalkStep WalkAt(int64_t j, int64_t steps) {
  const int64_t per = steps / kParts, longer = steps % kParts;  // parts < longer have per + 1 steps
  const int64_t head = longer * (per + 1);
  int64_t p, k, len;
  if (j < head) {
    p = j / (per + 1), k = j % (per + 1), len = per + 1;
  } else {
    p = longer + (j - head) / per, k = (j - head) % per, len = per;
  }
  return {p + k * kParts, static_cast<int>(p), k == len - 1};
}

// hi = rn(x), lo = rn(x - hi) for 8 values a thread, by SplitPair: the bits
// every other kernel gives x's terms.
__global__ void SplitTermsKernel(const float* x, int64_t count8, uint4* hi, uint4* lo) {
  WaitForPriorGrid();
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= count8) return;
  const float4 a = __ldg(reinterpret_cast<const float4*>(x) + 2 * i);
  const float4 b = __ldg(reinterpret_cast<const float4*>(x) + 2 * i + 1);
  uint4 h, l;
  if (lo != nullptr) {
    SplitPair(a.x, a.y, &h.x, &l.x);
    SplitPair(a.z, a.w, &h.y, &l.y);
    SplitPair(b.x, b.y, &h.z, &l.z);
    SplitPair(b.z, b.w, &h.w, &l.w);
    lo[i] = l;
  } else {
    h = make_uint4(PackBf16(a.x, a.y), PackBf16(a.z, a.w), PackBf16(b.x, b.y), PackBf16(b.z, b.w));
  }
  hi[i] = h;
}

// grid (ceil(n / tokens), Σ row blocks, 1 or 8 parts); clusters of (1, 1, 8)
// where block z sums part z. Warp (wr, wt) = (warp % 2, warp / 2) takes rows
// [wr RT 16, +RT 16) and tokens [32 wt, +32) of the tile; lane (g, c) holds,
// for each 16-row tile and 8-token tile, the MMA fragments of matmul_mma.cu's
// lanes.
template <int WT, int RT, int Stages, bool Split, bool Whole>
__global__ void __launch_bounds__(GemmLayout<WT, RT, Stages, Split, Whole>::kThreads,
                                  GemmLayout<WT, RT, Stages, Split, Whole>::kMinBlocks)
    MmaGemmKernel(MmaWeights ws, const uint16_t* xh, const uint16_t* xl, int64_t n, bool early) {
  using L = GemmLayout<WT, RT, Stages, Split, Whole>;
  constexpr int kGemmThreads = L::kThreads, kGemmTokens = L::kTokens;
  if (!early) WaitForPriorGrid();
  const int i = WeightOf(ws, blockIdx.y);
  const DevWeight& w = ws.w[i];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
  const int wr = warp & 1, wt = warp >> 1;
  const int64_t rb = (blockIdx.y - ws.first[i]) * L::kRowsBlock, t0 = int64_t{blockIdx.x} * kGemmTokens;
  const int64_t cols = w.cols, steps = cols / kStepCols;
  const int part = static_cast<int>(blockIdx.z);
  // The steps this block walks (≥ 1: LaunchGemm needs 8), and the j-th's step.
  const int64_t count = Whole ? steps : (steps - part + kParts - 1) / kParts;
  auto step_at = [&](int64_t j) -> int64_t { return Whole ? WalkAt(j, steps).step : part + j * kParts; };
  // This warp's 8-token tiles that hold tokens (warp-uniform).
  const int64_t left = n - t0 - 32 * wt;
  const int live = left <= 0 ? 0 : left >= 32 ? 4 : static_cast<int>((left + 7) / 8);

  extern __shared__ uint4 smem[];
  auto copy_w = [&](int stage, int64_t s) {
    uint4* dst = smem + stage * L::kStageWords;
#pragma unroll
    for (int q = 0; q < L::kWWords / kGemmThreads; ++q) {
      const int piece = q * kGemmThreads + tid, r = piece >> 3, chunk = piece & 7;
      const int64_t gr = rb + r;
      const bool ok = gr < w.rows;
      CopyAsync16(dst + r * 8 + (chunk ^ (r & 7)),
                  static_cast<const char*>(w.data) + (ok ? gr : 0) * w.row_bytes + s * kStepCols * 2 + chunk * 16, ok);
    }
  };
  auto copy_x = [&](int stage, int64_t s) {
    uint4* dst = smem + stage * L::kStageWords + L::kWWords;
#pragma unroll
    for (int q = 0; q < L::kXWords / kGemmThreads; ++q) {
      const int piece = q * kGemmThreads + tid, term = piece / (kGemmTokens * 8);
      const int tl = (piece >> 3) % kGemmTokens, chunk = piece & 7;
      const int64_t tok = t0 + tl;
      const bool ok = tok < n;
      const uint16_t* src = term == 0 ? xh : xl;
      CopyAsync16(dst + (term * kGemmTokens + tl) * 8 + (chunk ^ (tl & 7)),
                  src + (ok ? tok : 0) * cols + s * kStepCols + chunk * 8, ok);
    }
  };

  // The ring's first Stages - 1 steps: weights before the wait for the kernel
  // before (they are never written by a step), x after it.
#pragma unroll
  for (int k = 0; k < Stages - 1; ++k) {
    if (k < count) copy_w(k, step_at(k));
  }
  if (early) WaitForPriorGrid();
#pragma unroll
  for (int k = 0; k < Stages - 1; ++k) {
    if (k < count) copy_x(k, step_at(k));
    CopyAsyncCommit();
  }

  // acc: the current part's sums; tot (a whole walk): the parts' so far.
  float acc[RT][4][4];
  [[maybe_unused]] float tot[Whole ? RT : 1][4][4];
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
    for (int t = 0; t < 4; ++t) acc[rt][t][0] = acc[rt][t][1] = acc[rt][t][2] = acc[rt][t][3] = 0.0f;
  }
  for (int64_t j = 0; j < count; ++j) {
    CopyAsyncWait<Stages - 2>();  // this thread's copies of step j
    __syncthreads();              // everyone's; and every warp is done with step j - 1's stage
    const int64_t jn = j + Stages - 1;
    if (jn < count) {
      const int64_t sn = step_at(jn);
      copy_w(static_cast<int>(jn % Stages), sn);
      copy_x(static_cast<int>(jn % Stages), sn);
    }
    CopyAsyncCommit();
    const uint4* ws_ = smem + (j % Stages) * L::kStageWords;
    const uint4* xs = ws_ + L::kWWords;
#pragma unroll
    for (int ch = 0; ch < 2; ++ch) {
      const int q = ChunkOf(c, ch) ^ g;  // rows and tokens of a lane are ≡ g mod 8
      uint32_t h[4][4], l[4][4];
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int tl = 32 * wt + 8 * t + g;
        const uint4 hv = xs[tl * 8 + q];
        h[t][0] = hv.x, h[t][1] = hv.y, h[t][2] = hv.z, h[t][3] = hv.w;
        if constexpr (Split) {
          const uint4 lv = xs[(kGemmTokens + tl) * 8 + q];
          l[t][0] = lv.x, l[t][1] = lv.y, l[t][2] = lv.z, l[t][3] = lv.w;
        } else {
          l[t][0] = l[t][1] = l[t][2] = l[t][3] = 0;
        }
      }
#pragma unroll
      for (int rt = 0; rt < RT; ++rt) {
        const int ra = (wr * RT + rt) * kRows + g;
        const uint4 wa = ws_[ra * 8 + q], wb = ws_[(ra + 8) * 8 + q];
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          if (t < live) MmaChunk<Split>(wa, wb, h[t], l[t], acc[rt][t]);
        }
      }
    }
    if constexpr (Whole) {
      const WalkStep at = WalkAt(j, steps);
      if (at.last) {  // the part is done: the total takes it (v = p0, v += p1, ...), the next starts from zero
#pragma unroll
        for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
          for (int t = 0; t < 4; ++t) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              tot[rt][t][e] = at.part == 0 ? acc[rt][t][e] : tot[rt][t][e] + acc[rt][t][e];
              acc[rt][t][e] = 0.0f;
            }
          }
        }
      }
    }
  }
  CopyAsyncWait<0>();
  if constexpr (Whole) {
    float* y = ws.y[i];
#pragma unroll
    for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
      for (int t = 0; t < 4; ++t) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          // d0, d1: row g, tokens 2c, 2c + 1; d2, d3: row g + 8.
          const int64_t row = rb + (wr * RT + rt) * kRows + g + (e >= 2 ? 8 : 0);
          const int64_t tok = t0 + 32 * wt + 8 * t + 2 * c + (e & 1);
          if (tok < n && row < w.rows) y[tok * w.rows + row] = tot[rt][t][e];
        }
      }
    }
    return;
  }
  __syncthreads();  // the ring is free: the part's sums go where it was

  float* sums = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
    for (int t = 0; t < 4; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        // d0, d1: row g, tokens 2c, 2c + 1; d2, d3: row g + 8.
        const int r = (wr * RT + rt) * kRows + g + (e >= 2 ? 8 : 0), tl = 32 * wt + 8 * t + 2 * c + (e & 1);
        sums[tl * L::kSumStride + r] = acc[rt][t][e];
      }
    }
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  // Block z adds the parts of tokens [16 z, +16), in part order, 4 rows a thread at a time.
  const int z = static_cast<int>(cluster.block_rank());
  constexpr int kQuads = L::kRowsBlock / 4;
  float* y = ws.y[i];
  const bool vec = w.rows % 4 == 0 && (reinterpret_cast<uintptr_t>(y) & 15u) == 0;
  for (int e = tid; e < L::kReduceTokens * kQuads; e += kGemmThreads) {
    const int tl = z * L::kReduceTokens + e / kQuads, r = (e % kQuads) * 4;
    const int64_t tok = t0 + tl, row = rb + r;
    if (tok >= n || row >= w.rows) continue;
    float4 v = make_float4(0, 0, 0, 0);
#pragma unroll
    for (int p = 0; p < kParts; ++p) {
      const float4 s = *reinterpret_cast<const float4*>(cluster.map_shared_rank(sums, p) + tl * L::kSumStride + r);
      if (p == 0) {
        v = s;
      } else {
        v.x += s.x, v.y += s.y, v.z += s.z, v.w += s.w;
      }
    }
    float* out = y + tok * w.rows + row;
    if (vec) {
      *reinterpret_cast<float4*>(out) = v;
    } else {
      const float vs[4] = {v.x, v.y, v.z, v.w};
      for (int k = 0; k < 4 && row + k < w.rows; ++k) out[k] = vs[k];
    }
  }
  cluster.sync();  // no block leaves while another reads its sums
#else
  __trap();  // clusters are Hopper's: GemmTakes declines older GPUs
#endif
}

// Opt-in (LLMHOST_CUDA_MMA_GEMM=on): at 128 sequences of the Llama-3-8B
// shape on an H100 it measured 3,505-3,726 tok/s against the wide kernel's
// 3,935 (a block's one part of a 4,096-column weight is 8 steps: the ring's
// fill and the cluster's reduction are not paid for, one block an SM).
constexpr bool kGemmByDefault = false;
bool GemmEnabled() {
  const char* v = std::getenv("LLMHOST_CUDA_MMA_GEMM");
  if (v == nullptr) return kGemmByDefault;
  return std::strcmp(v, "on") == 0;
}

// The fewest tokens a launch takes the GEMM from (LLMHOST_CUDA_GEMM_FROM, at
// least 9: up to 8 tokens have their own kernel).
constexpr int64_t kGemmFrom = 97;
int64_t GemmFrom() {
  const char* v = std::getenv("LLMHOST_CUDA_GEMM_FROM");
  if (v == nullptr) return kGemmFrom;
  const long long f = std::atoll(v);
  return f < 9 ? 9 : f;
}

// How the parts are walked: every part by one block unless
// LLMHOST_CUDA_GEMM_PARTS=cluster (one part a block of a cluster of 8).
bool GemmWhole() {
  const char* v = std::getenv("LLMHOST_CUDA_GEMM_PARTS");
  return v == nullptr || std::strcmp(v, "cluster") != 0;
}

// A cluster walk's rows a block (LLMHOST_CUDA_GEMM_ROWS=128|256) and stages
// in the ring (LLMHOST_CUDA_GEMM_STAGES=2|3|4; 4 only with 128 rows): for A/Bs.
int GemmRows() {
  const char* v = std::getenv("LLMHOST_CUDA_GEMM_ROWS");
  return v != nullptr && std::strcmp(v, "256") == 0 ? 256 : 128;
}
int GemmStages(int rows) {
  const char* v = std::getenv("LLMHOST_CUDA_GEMM_STAGES");
  const int s = v == nullptr ? 3 : std::atoi(v);
  if (s == 2) return 2;
  if (s == 4 && rows == 128) return 4;
  return 3;
}

// A whole walk's tile: rows x tokens a block, chosen per launch as the
// largest that still gives kMinBlocks blocks (a 4,096-row weight at 128
// tokens would be 32 blocks of 128 x 128 on 132 SMs), or forced by
// LLMHOST_CUDA_GEMM_TILE=128x128|128x64|64x64.
enum class WholeTile { k128x128, k128x64, k64x64 };
WholeTile ChooseWholeTile(const MmaWeights& ws, int64_t n) {
  const char* v = std::getenv("LLMHOST_CUDA_GEMM_TILE");
  if (v != nullptr && std::strcmp(v, "128x128") == 0) return WholeTile::k128x128;
  if (v != nullptr && std::strcmp(v, "128x64") == 0) return WholeTile::k128x64;
  if (v != nullptr && std::strcmp(v, "64x64") == 0) return WholeTile::k64x64;
  auto blocks = [&](int64_t rows, int64_t tokens) {
    int64_t b = 0;
    for (int k = 0; k < ws.count; ++k) b += (ws.w[k].rows + rows - 1) / rows;
    return b * ((n + tokens - 1) / tokens);
  };
  if (blocks(128, 128) >= kMinBlocks) return WholeTile::k128x128;
  if (blocks(128, 64) >= kMinBlocks) return WholeTile::k128x64;
  return WholeTile::k64x64;
}

template <int WT, int RT, int Stages, bool Split, bool Whole>
void LaunchGemmShape(MmaWeights ws, int64_t n, const uint16_t* xh, const uint16_t* xl, cudaStream_t s) {
  using L = GemmLayout<WT, RT, Stages, Split, Whole>;
  ws.first[0] = 0;
  for (int k = 0; k < ws.count; ++k) {
    ws.first[k + 1] = ws.first[k] + (ws.w[k].rows + L::kRowsBlock - 1) / L::kRowsBlock;
  }
  auto kernel = MmaGemmKernel<WT, RT, Stages, Split, Whole>;
  // Each launch: the attribute is a device's (several GPUs in one process).
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L::kBytes));
  const dim3 grid(static_cast<unsigned>((n + L::kTokens - 1) / L::kTokens), static_cast<unsigned>(ws.first[ws.count]),
                  Whole ? 1 : kParts);
  LaunchPdlCluster(kernel, grid, dim3(L::kThreads), L::kBytes, dim3(1, 1, Whole ? 1 : kParts), s, ws, xh, xl, n,
                   EarlyWeightLoadsEnabled());
}

template <int WT, int RT, bool Split>
void LaunchWholeStages(MmaWeights ws, int64_t n, const uint16_t* xh, const uint16_t* xl, cudaStream_t s) {
  const char* v = std::getenv("LLMHOST_CUDA_GEMM_STAGES");
  if (v != nullptr && std::strcmp(v, "4") == 0) {
    LaunchGemmShape<WT, RT, 4, Split, true>(ws, n, xh, xl, s);
  } else {
    LaunchGemmShape<WT, RT, 3, Split, true>(ws, n, xh, xl, s);
  }
}

template <bool Split>
void LaunchGemmSplit(MmaWeights ws, int64_t n, const uint16_t* xh, const uint16_t* xl, cudaStream_t s) {
  if (GemmWhole()) {
    switch (ChooseWholeTile(ws, n)) {
      case WholeTile::k128x128: LaunchWholeStages<4, 4, Split>(ws, n, xh, xl, s); break;
      case WholeTile::k128x64: LaunchWholeStages<2, 4, Split>(ws, n, xh, xl, s); break;
      case WholeTile::k64x64: LaunchWholeStages<2, 2, Split>(ws, n, xh, xl, s); break;
    }
    return;
  }
  const int rows = GemmRows(), stages = GemmStages(rows);
  if (rows == 256) {
    stages == 2 ? LaunchGemmShape<4, 8, 2, Split, false>(ws, n, xh, xl, s)
                : LaunchGemmShape<4, 8, 3, Split, false>(ws, n, xh, xl, s);
    return;
  }
  switch (stages) {
    case 2: LaunchGemmShape<4, 4, 2, Split, false>(ws, n, xh, xl, s); break;
    case 4: LaunchGemmShape<4, 4, 4, Split, false>(ws, n, xh, xl, s); break;
    default: LaunchGemmShape<4, 4, 3, Split, false>(ws, n, xh, xl, s); break;
  }
}

}  // namespace

// The largest block the launch shapes ask for (256 rows, 3 stages, two
// terms, or a whole walk's 128 x 128 with 4 stages: 192 KiB): a GPU whose blocks may not have it (a consumer
// Blackwell's ~99 KiB) keeps the wide kernel.
constexpr size_t kGemmMaxBytes = GemmLayout<4, 8, 3, true, false>::kBytes;
static_assert(GemmLayout<4, 4, 4, true, true>::kBytes <= kGemmMaxBytes, "the whole walk's largest block");

bool GemmTakes(const DevWeight& w, int64_t n) {
  return w.fmt == WFmt::kBF16 && n >= GemmFrom() && GemmEnabled() && HopperOrNewer() &&
         static_cast<size_t>(MaxSharedPerBlock()) >= kGemmMaxBytes && w.cols % kStepCols == 0 &&
         w.cols / kStepCols >= kParts;
}

int64_t GemmTermsBytes(const DevWeight& w, int64_t n, bool split) {
  return GemmTakes(w, n) ? n * w.cols * 2 * (split ? 2 : 1) : 0;
}

bool LaunchGemm(MmaWeights ws, int64_t n, const float* x, uint16_t* terms, bool split, cudaStream_t s) {
  if (terms == nullptr || (reinterpret_cast<uintptr_t>(x) & 15u) != 0 ||
      (reinterpret_cast<uintptr_t>(terms) & 15u) != 0) {
    return false;
  }
  for (int k = 0; k < ws.count; ++k) {
    if (!GemmTakes(ws.w[k], n) || ws.w[k].cols != ws.w[0].cols) return false;
  }
  const int64_t cols = ws.w[0].cols, count8 = n * cols / 8;
  uint16_t* xh = terms;
  uint16_t* xl = split ? terms + n * cols : nullptr;
  constexpr int kSplitThreads = 256;
  LaunchPdl(SplitTermsKernel, dim3(static_cast<unsigned>((count8 + kSplitThreads - 1) / kSplitThreads)),
            dim3(kSplitThreads), 0, s, x, count8, reinterpret_cast<uint4*>(xh), reinterpret_cast<uint4*>(xl));
  split ? LaunchGemmSplit<true>(ws, n, xh, xl, s) : LaunchGemmSplit<false>(ws, n, xh, xl, s);
  return true;
}

}  // namespace llmhost::cuda::mma_rows
