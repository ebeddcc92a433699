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

// f(rt, t, e, r, tl) for each of a warp's sums: row tile rt, 8-token tile t,
// MMA element e, which is the tile's row r and token tl (d0, d1: row g,
// tokens 2c, 2c + 1; d2, d3: row g + 8) for the warp (wr, wt) of RT row tiles.
template <int RT, typename F>
__device__ __forceinline__ void ForEachSum(int wr, int wt, int g, int c, F&& f) {
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
    for (int t = 0; t < 4; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        f(rt, t, e, (wr * RT + rt) * kRows + g + (e >= 2 ? 8 : 0), 32 * wt + 8 * t + 2 * c + (e & 1));
      }
    }
  }
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
  const int64_t cols = w.cols;
  const int steps = static_cast<int>(cols / kStepCols);
  // The steps this block walks (≥ 1: LaunchGemm needs 8): the ring's (prod)
  // and the MMAs' (cons).
  Walk prod(steps, static_cast<int>(blockIdx.z), Whole), cons = prod;
  const int count = Whole ? steps : prod.len;
  // This warp's 8-token tiles that hold tokens (warp-uniform).
  const int64_t left = n - t0 - 32 * wt;
  const int live = left <= 0 ? 0 : left >= 32 ? 4 : static_cast<int>((left + 7) / 8);

  // A thread's copies of a step: piece q = q T + tid is row (or token) q T /
  // 8 + tid / 8 of its array, chunk tid % 8, so every piece's source is the
  // first one's plus q strides and its place in the stage q T words further
  // (T / 8 is a multiple of 8: the swizzle is the same for every q).
  constexpr int kWCopies = L::kWWords / kGemmThreads, kXCopies = L::kXWords / kGemmThreads;
  constexpr int kLinesPerCopy = kGemmThreads / 8;
  const int line = tid >> 3, chunk = tid & 7;
  const int dst0 = line * 8 + (chunk ^ (line & 7));
  const char* wsrc = static_cast<const char*>(w.data) + (rb + line) * w.row_bytes + chunk * 16;
  const int64_t wstride = kLinesPerCopy * w.row_bytes;
  const int64_t wleft = w.rows - rb - line;  // piece q holds a row when q T / 8 < wleft
  const int64_t xleft = n - t0 - line;
  const uint16_t* xsrc[2] = {xh + (t0 + line) * cols + chunk * 8, Split ? xl + (t0 + line) * cols + chunk * 8 : xh};
  const int64_t xstride = kLinesPerCopy * cols;
  static_assert(kXCopies == L::kTerms * 4, "a term's tokens are 4 copies a thread");

  extern __shared__ uint4 smem[];
  auto copy_w = [&](int stage, int s) {
    uint4* dst = smem + stage * L::kStageWords + dst0;
#pragma unroll
    for (int q = 0; q < kWCopies; ++q) {
      const bool ok = q * kLinesPerCopy < wleft;
      CopyAsync16(dst + q * kGemmThreads, ok ? wsrc + q * wstride + s * (kStepCols * 2) : w.data, ok);
    }
  };
  auto copy_x = [&](int stage, int s) {
    uint4* dst = smem + stage * L::kStageWords + L::kWWords + dst0;
#pragma unroll
    for (int q = 0; q < kXCopies; ++q) {
      const bool ok = (q % 4) * kLinesPerCopy < xleft;
      CopyAsync16(dst + q * kGemmThreads, ok ? xsrc[q / 4] + (q % 4) * xstride + s * kStepCols : xh, ok);
    }
  };

  // The ring's first Stages - 1 steps: weights before the wait for the kernel
  // before (they are never written by a step), x after it.
  {
    Walk at = prod;
#pragma unroll
    for (int k = 0; k < Stages - 1; ++k) {
      if (k < count) copy_w(k, at.Step());
      at.Next();
    }
  }
  if (early) WaitForPriorGrid();
#pragma unroll
  for (int k = 0; k < Stages - 1; ++k) {
    if (k < count) copy_x(k, prod.Step());
    prod.Next();
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
  int stage = 0, next_stage = Stages - 1;  // step j's stage, step j + Stages - 1's
  for (int j = 0; j < count; ++j) {
    CopyAsyncWait<Stages - 2>();  // this thread's copies of step j
    __syncthreads();              // everyone's; and every warp is done with step j - 1's stage
    if (j + Stages - 1 < count) {
      copy_w(next_stage, prod.Step());
      copy_x(next_stage, prod.Step());
      prod.Next();
    }
    CopyAsyncCommit();
    const uint4* ws_ = smem + stage * L::kStageWords;
    stage = stage + 1 == Stages ? 0 : stage + 1;
    next_stage = next_stage + 1 == Stages ? 0 : next_stage + 1;
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
      if (cons.Last()) {  // the part is done: the total takes it (v = p0, v += p1, ...), the next starts from zero
        const bool first_part = cons.part == 0;
        ForEachSum<RT>(wr, wt, g, c, [&](int rt, int t, int e, int, int) {
          tot[rt][t][e] = first_part ? acc[rt][t][e] : tot[rt][t][e] + acc[rt][t][e];
          acc[rt][t][e] = 0.0f;
        });
      }
      cons.Next();
    }
  }
  CopyAsyncWait<0>();
  if constexpr (Whole) {
    float* y = ws.y[i];
    ForEachSum<RT>(wr, wt, g, c, [&](int rt, int t, int e, int r, int tl) {
      const int64_t row = rb + r, tok = t0 + tl;
      if (tok < n && row < w.rows) y[tok * w.rows + row] = tot[rt][t][e];
    });
    return;
  }
  __syncthreads();  // the ring is free: the part's sums go where it was

  float* sums = reinterpret_cast<float*>(smem);
  ForEachSum<RT>(wr, wt, g, c,
                 [&](int rt, int t, int e, int r, int tl) { sums[tl * L::kSumStride + r] = acc[rt][t][e]; });
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

// A whole walk's tile, rows x tokens a block: 128 x 128 where the launch
// makes kMinBlocks such blocks (the FFN's gate and up, a head); else none,
// and the wide kernel runs (measured on an H100 at 128 tokens: smaller
// tiles, 4 warps a block and a block or two an SM, lost to it). Forced by
// LLMHOST_CUDA_GEMM_TILE=128x128|128x64|64x64 (tests, A/Bs).
enum class WholeTile { kNone, k128x128, k128x64, k64x64 };
WholeTile ChooseWholeTile(const DevWeight* w, int count, int64_t n) {
  const char* v = std::getenv("LLMHOST_CUDA_GEMM_TILE");
  if (v != nullptr && std::strcmp(v, "128x128") == 0) return WholeTile::k128x128;
  if (v != nullptr && std::strcmp(v, "128x64") == 0) return WholeTile::k128x64;
  if (v != nullptr && std::strcmp(v, "64x64") == 0) return WholeTile::k64x64;
  int64_t blocks = 0;
  for (int k = 0; k < count; ++k) blocks += (w[k].rows + 127) / 128;
  return blocks * ((n + 127) / 128) >= kMinBlocks ? WholeTile::k128x128 : WholeTile::kNone;
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

// How a launch runs, read from the switches once (GemmTermsBytes and
// LaunchGemm each read them once: a switch changed between two reads could
// not leave a launch half taken).
struct GemmPlan {
  bool whole = true;                       // else a cluster a part a block
  WholeTile tile = WholeTile::k128x128;    // a whole walk's
};

template <bool Split>
void LaunchGemmSplit(const GemmPlan& plan, MmaWeights ws, int64_t n, const uint16_t* xh, const uint16_t* xl,
                     cudaStream_t s) {
  if (plan.whole) {
    switch (plan.tile) {
      case WholeTile::kNone: break;  // PlanGemm declined it
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

namespace {
// The GEMM's plan for this launch, or false where it does not take it: every
// weight must, and a whole walk needs a tile for them.
bool PlanGemm(const DevWeight* w, int count, int64_t n, GemmPlan* plan) {
  for (int k = 0; k < count; ++k) {
    if (!GemmTakes(w[k], n) || w[k].cols != w[0].cols) return false;
  }
  plan->whole = GemmWhole();
  if (!plan->whole) return true;
  plan->tile = ChooseWholeTile(w, count, n);
  return plan->tile != WholeTile::kNone;
}
}  // namespace

int64_t GemmTermsBytes(const DevWeight* w, int count, int64_t n, bool split) {
  GemmPlan plan;
  return PlanGemm(w, count, n, &plan) ? n * w[0].cols * 2 * (split ? 2 : 1) : 0;
}

bool LaunchGemm(MmaWeights ws, int64_t n, const float* x, uint16_t* terms, bool split, cudaStream_t s) {
  GemmPlan plan;
  if (terms == nullptr || (reinterpret_cast<uintptr_t>(x) & 15u) != 0 ||
      (reinterpret_cast<uintptr_t>(terms) & 15u) != 0 || !PlanGemm(ws.w, ws.count, n, &plan)) {
    return false;
  }
  const int64_t cols = ws.w[0].cols, count8 = n * cols / 8;
  uint16_t* xh = terms;
  uint16_t* xl = split ? terms + n * cols : nullptr;
  constexpr int kSplitThreads = 256;
  LaunchPdl(SplitTermsKernel, dim3(static_cast<unsigned>((count8 + kSplitThreads - 1) / kSplitThreads)),
            dim3(kSplitThreads), 0, s, x, count8, reinterpret_cast<uint4*>(xh), reinterpret_cast<uint4*>(xl));
  split ? LaunchGemmSplit<true>(plan, ws, n, xh, xl, s) : LaunchGemmSplit<false>(plan, ws, n, xh, xl, s);
  return true;
}

}  // namespace llmhost::cuda::mma_rows
