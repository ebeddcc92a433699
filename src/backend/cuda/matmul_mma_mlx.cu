#include "backend/cuda/common.cuh"
#include "backend/cuda/env_switch.h"
#include "backend/cuda/matmul_mma.cuh"
#include "backend/cuda/matmul_mma_mlx.cuh"
#include "backend/cuda/mma_bf16.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kWarps = 8;          // a block's warps deal the steps of its rows among them
constexpr int kTileRows = 15;      // weight rows of a 16-row MMA tile; row 15 is the ones row
constexpr int kMaxWeights = 4;
constexpr int64_t kMinBlocks = 128;  // about one per SM of an H100 / H200

// A step is 64 bytes of a row (16 a lane, four 32-bit words): 128 columns
// of 4-bit codes or 64 of 8-bit ones.
template <int Bits>
struct Layout {
  static constexpr int kWordCols = 32 / Bits;
  static constexpr int kStepCols = 16 * kWordCols;
  static constexpr int kPairs = kWordCols / 2;  // bf16 pairs of a word; an MMA takes two
  static constexpr uint32_t kOnes = Bits == 4 ? 0x11111111u : 0x01010101u;  // codes of 1: the ones row
};

struct MlxWeights {
  DevWeight w[kMaxWeights];
  float* y[kMaxWeights];
  int64_t first[kMaxWeights + 1];  // weight i's first block
  int count = 0;
};

// The codes of `word` (column i at bits Bits * i) as exact bf16 pairs.
// 4-bit: (q_i, q_{i+4}), i = 0..3: q in the mantissa of 128 (0x4300 | q is
// 128 + q), then 128 subtracted by one bf16x2 fma. 8-bit: (q_2i, q_2i+1),
// i = 0..1: each byte an f32 (2^23 + q, minus 2^23), then packed (q < 256
// has 8 significant bits: exact in bf16).
template <int Bits>
__device__ __forceinline__ void Codes(uint32_t word, uint32_t (&p)[Layout<Bits>::kPairs]) {
  if constexpr (Bits == 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t biased = ((word >> (4 * i)) & 0x000F000Fu) | 0x43004300u;
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(p[i]) : "r"(biased), "r"(0x3F803F80u), "r"(0xC300C300u));
    }
  } else {
    float q[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) q[k] = __uint_as_float(0x4B000000u | ((word >> (8 * k)) & 0xFFu)) - 8388608.0f;
    p[0] = PackBf16(q[0], q[1]);
    p[1] = PackBf16(q[2], q[3]);
  }
}

// x's columns of a word's codes, paired as Codes pairs them: split into bf16
// terms (hi, and lo with Split) once for every row tile.
template <int Bits, bool Split>
__device__ __forceinline__ void XTerms(const float* p, bool valid, bool xvec, uint32_t (&h)[Layout<Bits>::kPairs],
                                       uint32_t (&l)[Layout<Bits>::kPairs]) {
  constexpr int kCols = Layout<Bits>::kWordCols;
  float v[kCols];
  if (!valid) {
#pragma unroll
    for (int k = 0; k < kCols; ++k) v[k] = 0.0f;
  } else if (xvec) {
#pragma unroll
    for (int k = 0; k < kCols; k += 4) {
      const float4 a = __ldg(reinterpret_cast<const float4*>(p + k));
      v[k] = a.x, v[k + 1] = a.y, v[k + 2] = a.z, v[k + 3] = a.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kCols; ++k) v[k] = __ldg(p + k);
  }
#pragma unroll
  for (int i = 0; i < Layout<Bits>::kPairs; ++i) {
    const float x0 = Bits == 4 ? v[i] : v[2 * i], x1 = Bits == 4 ? v[i + 4] : v[2 * i + 1];
    if constexpr (Split) {
      SplitPair(x0, x1, &h[i], &l[i]);
    } else {
      h[i] = PackBf16(x0, x1);
      l[i] = 0;
    }
  }
}

// One stage of a transpose of the 4x4 words of a row's four lanes: the words
// whose index bit B differs from the lane's bit B trade places with lane
// c ^ (1 << B). Every lane of the warp takes part.
template <int B>
__device__ __forceinline__ void Exchange(uint32_t (&v)[4], int c) {
  constexpr int l0 = 0, l1 = B == 1 ? 1 : 2, h0 = l0 | (1 << B), h1 = l1 | (1 << B);
  const bool up = (c >> B) & 1;
  const uint32_t r0 = __shfl_xor_sync(0xFFFFFFFFu, up ? v[l0] : v[h0], 1 << B);
  const uint32_t r1 = __shfl_xor_sync(0xFFFFFFFFu, up ? v[l1] : v[h1], 1 << B);
  if (up) {
    v[l0] = r0;
    v[l1] = r1;
  } else {
    v[h0] = r0;
    v[h1] = r1;
  }
}

// Lane c loads bytes [16c, 16c + 16) of a row's 64-byte step; an MMA takes
// its k from all four lanes of a row, so where a step holds G groups the
// words are regrouped until word slot j of the four lanes lies in one group:
// group j of 4 (a full transpose), j / 2 of 2, or as loaded for 1.
template <int G>
__device__ __forceinline__ void Regroup(uint32_t (&v)[4], int c) {
  if constexpr (G >= 2) Exchange<1>(v, c);
  if constexpr (G == 4) Exchange<0>(v, c);
}

// The first column (within the step) of slot j on lane c after Regroup<G>,
// for words of W columns.
template <int G, int W>
__device__ __forceinline__ int SlotCol(int c, int j) {
  if constexpr (G == 4) return 4 * W * j + W * c;
  if constexpr (G == 2) return 4 * W * ((j & 2) | (c & 1)) + W * ((c & 2) | (j & 1));
  return 4 * W * c + W * j;
}

// A group's scale or bias among the packed 16-bit values of a step.
template <int PW>
__device__ __forceinline__ float ParamAt(const uint32_t (&words)[PW], int group, Elem t) {
  const uint16_t h = static_cast<uint16_t>(words[group >> 1] >> (16 * (group & 1)));
  return t == Elem::kBF16 ? Bf16ToF32(h) : F16ToF32(h);
}

// The 16-bit scales (or biases) of one row's G groups in step s, packed two a word.
template <int G>
__device__ __forceinline__ void LoadParams(const uint16_t* row_params, int64_t s, bool valid,
                                           uint32_t (&out)[(G + 1) / 2]) {
  if constexpr (G == 1) {
    out[0] = valid ? __ldg(row_params + s) : 0u;
  } else if constexpr (G == 2) {
    out[0] = valid ? __ldg(reinterpret_cast<const uint32_t*>(row_params + 2 * s)) : 0u;
  } else {
    const uint2 v = valid ? __ldg(reinterpret_cast<const uint2*>(row_params + 4 * s)) : make_uint2(0, 0);
    out[0] = v.x;
    out[1] = v.y;
  }
}

// grid (ceil(n / (8 NT)), Σ blocks): a block takes RT tiles of 15 rows and
// NT tiles of 8 tokens. Warp w takes the steps s = w, w + 8, ... of every row
// tile: lane (g, c) loads bytes [64 s + 16 c, +16) of rows g and g + 8 of
// each tile (the four lanes of a row read 64 contiguous bytes; lane group 7's
// row g + 8 is the ones row), regroups them (Regroup), and takes the same
// columns of x (a word's 8 or 4) of its token g of each token tile for each
// word slot, split into bf16 terms once for the RT row tiles. x's terms are
// paired as the codes are (XTerms, Codes): the MMAs' k order is a
// permutation of the columns, the same for A and B. Each group's sums start
// from zero and are added to the row's total as scale · Σ q·x + bias · Σ x.
// A token's sum is the same whatever NT, RT and U are: each warp's steps in
// order, its slots in order, then the warps in order. (Four groups a step
// hold twice the scales and biases in registers: one block an SM where two
// would spill.)
// With Pipe, a warp loads its next U steps before it sums the current ones
// (two register buffers), so that weight bytes stay in flight while it
// computes; the sums are the same, in the same order. With `early`, the
// first weight loads go out before the wait for the kernel before it
// (matmul_mma.cu says why).
template <int NT, int RT, int U, int Bits, int GS, bool Split, bool Pipe>
__global__ void __launch_bounds__(kWarps * 32,
                                  RT * NT >= 4 || (Layout<Bits>::kStepCols / GS == 4 && U * RT >= 4) ? 1 : 2)
    MmaMlxKernel(MlxWeights ws, const float* x, int64_t n, bool xvec, bool early) {
  using L = Layout<Bits>;
  constexpr int kStepCols = L::kStepCols, kGroups = kStepCols / GS, kSlotsPerGroup = 4 / kGroups;
  constexpr int kParamWords = (kGroups + 1) / 2, kPairs = L::kPairs;
  if (!early) WaitForPriorGrid();
  int i = 0;
  while (i + 1 < ws.count && blockIdx.y >= ws.first[i + 1]) ++i;
  const DevWeight& w = ws.w[i];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const int64_t r0 = (blockIdx.y - ws.first[i]) * kTileRows * RT, t0 = static_cast<int64_t>(blockIdx.x) * NT * 8;
  const int64_t cols = w.cols, steps = cols / kStepCols, groups = cols / GS;
  const Elem param_type = w.scale_type;
  const uint4* row[RT][2];
  const uint16_t* scales = static_cast<const uint16_t*>(w.scales);
  const uint16_t* biases = static_cast<const uint16_t*>(w.biases);
  int64_t params[RT][2];  // the row's first group
  bool rv[RT][2];
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int f = g + 8 * half;  // the tile's row: 15 is the ones row
      const int64_t r = r0 + rt * kTileRows + f;
      rv[rt][half] = f < kTileRows && r < w.rows;
      const int64_t rr = rv[rt][half] ? r : 0;
      row[rt][half] = reinterpret_cast<const uint4*>(static_cast<const char*>(w.data) + rr * w.row_bytes) + c;
      params[rt][half] = rr * groups;
    }
  }
  const uint4 padding = g == 7 ? make_uint4(L::kOnes, L::kOnes, L::kOnes, L::kOnes) : make_uint4(0, 0, 0, 0);
  const float* xt[NT];
  bool tv[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const int64_t tok = t0 + t * 8 + g;
    tv[t] = tok < n;
    xt[t] = x + (tv[t] ? tok : 0) * cols;
  }
  float total[RT][NT][4], part[RT][NT][4];
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
    for (int t = 0; t < NT; ++t) total[rt][t][0] = total[rt][t][1] = total[rt][t][2] = total[rt][t][3] = 0.0f;
  }

  using Words = uint32_t[U][RT][2][4];  // [step][row tile][row g / g + 8][word]
  using Params = uint32_t[U][RT][2][kParamWords];
  auto load = [&](int64_t base, Words& wv, Params& sw, Params& bw) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t s = base + u * kWarps + warp;
#pragma unroll
      for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          // Invalid rows read zeros (their sums are never stored); the ones row reads kOnes.
          const bool ld = s < steps && rv[rt][half];
          const uint4 v = ld ? __ldg(row[rt][half] + 4 * s) : half == 1 ? padding : make_uint4(0, 0, 0, 0);
          wv[u][rt][half][0] = v.x, wv[u][rt][half][1] = v.y, wv[u][rt][half][2] = v.z, wv[u][rt][half][3] = v.w;
          LoadParams<kGroups>(scales + params[rt][half], s, ld, sw[u][rt][half]);
          LoadParams<kGroups>(biases + params[rt][half], s, ld, bw[u][rt][half]);
        }
      }
    }
  };
  auto sum = [&](int64_t base, Words& wv, const Params& sw, const Params& bw) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t s = base + u * kWarps + warp;
      if (s >= steps) break;  // the same for the whole warp: the shuffles below see every lane
#pragma unroll
      for (int rt = 0; rt < RT; ++rt) {
        Regroup<kGroups>(wv[u][rt][0], c);
        Regroup<kGroups>(wv[u][rt][1], c);
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        uint32_t a[RT][2][kPairs];  // [row tile][row g / g + 8][pair]
#pragma unroll
        for (int rt = 0; rt < RT; ++rt) {
          Codes<Bits>(wv[u][rt][0][j], a[rt][0]);
          Codes<Bits>(wv[u][rt][1][j], a[rt][1]);
        }
        if (j % kSlotsPerGroup == 0) {
#pragma unroll
          for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
            for (int t = 0; t < NT; ++t) part[rt][t][0] = part[rt][t][1] = part[rt][t][2] = part[rt][t][3] = 0.0f;
          }
        }
        const int col = SlotCol<kGroups, L::kWordCols>(c, j);
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          uint32_t h[kPairs], l[kPairs];
          XTerms<Bits, Split>(xt[t] + s * kStepCols + col, tv[t], xvec, h, l);
#pragma unroll
          for (int rt = 0; rt < RT; ++rt) {
            const uint32_t(&ag)[kPairs] = a[rt][0];
            const uint32_t(&ag8)[kPairs] = a[rt][1];
#pragma unroll
            for (int m = 0; m < kPairs; m += 2) {  // an MMA: pairs m (k 2c, 2c + 1) and m + 1 (k 2c + 8, 2c + 9)
              Mma(part[rt][t], ag[m], ag8[m], ag[m + 1], ag8[m + 1], h[m], h[m + 1]);
              if constexpr (Split) Mma(part[rt][t], ag[m], ag8[m], ag[m + 1], ag8[m + 1], l[m], l[m + 1]);
            }
          }
        }
        if (j % kSlotsPerGroup == kSlotsPerGroup - 1) {
          // The group is summed: fold it into the totals with its scales and biases.
          const int group = j / kSlotsPerGroup;
          float sc[RT][2], bi[RT][2];
#pragma unroll
          for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
            for (int half = 0; half < 2; ++half) {
              sc[rt][half] = ParamAt(sw[u][rt][half], group, param_type);
              bi[rt][half] = ParamAt(bw[u][rt][half], group, param_type);
            }
          }
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            // Σ x of tokens 2c, 2c + 1: the ones row (15 = g + 8 of lane group 7) of any tile.
            const float xs0 = __shfl_sync(0xFFFFFFFFu, part[0][t][2], 28 + c);
            const float xs1 = __shfl_sync(0xFFFFFFFFu, part[0][t][3], 28 + c);
#pragma unroll
            for (int rt = 0; rt < RT; ++rt) {
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const int half = e >> 1;
                total[rt][t][e] =
                    fmaf(sc[rt][half], part[rt][t][e], fmaf(bi[rt][half], (e & 1) ? xs1 : xs0, total[rt][t][e]));
              }
            }
          }
        }
      }
    }
  };
  constexpr int64_t kStride = kWarps * U;
  if constexpr (Pipe) {
    Words wa, wb;
    Params sa, ba, sb, bb;
    load(0, wa, sa, ba);
    if (early) WaitForPriorGrid();
    for (int64_t base = 0; base < steps; base += 2 * kStride) {
      load(base + kStride, wb, sb, bb);
      sum(base, wa, sa, ba);
      if (base + kStride >= steps) break;
      load(base + 2 * kStride, wa, sa, ba);
      sum(base + kStride, wb, sb, bb);
    }
  } else {
    Words wv;
    Params sw, bw;
    load(0, wv, sw, bw);
    if (early) WaitForPriorGrid();
    for (int64_t base = 0; base < steps; base += kStride) {
      if (base > 0) load(base, wv, sw, bw);
      sum(base, wv, sw, bw);
    }
  }

  // The warps' partial sums, added in warp order by warp 0, a row tile at a time.
  __shared__ float parts[kWarps - 1][NT][4][32];
  float* y = ws.y[i];
#pragma unroll
  for (int rt = 0; rt < RT; ++rt) {
    if (rt > 0) __syncthreads();  // warp 0 has read the last tile's partials
    if (warp > 0) {
#pragma unroll
      for (int t = 0; t < NT; ++t) {
#pragma unroll
        for (int e = 0; e < 4; ++e) parts[warp - 1][t][e][lane] = total[rt][t][e];
      }
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
      for (int t = 0; t < NT; ++t) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float v = total[rt][t][e];
#pragma unroll
          for (int k = 0; k < kWarps - 1; ++k) v += parts[k][t][e][lane];
          // d0, d1: tile row g, tokens 2c, 2c + 1; d2, d3: tile row g + 8.
          const int f = g + (e >= 2 ? 8 : 0);
          const int64_t r = r0 + rt * kTileRows + f, tok = t0 + t * 8 + 2 * c + (e & 1);
          if (f < kTileRows && r < w.rows && tok < n) y[tok * w.rows + r] = v;
        }
      }
    }
  }
}

// Tile shapes by n: the fewest 8-token tiles that hold n (up to 4), and as
// many row tiles as leave enough blocks to fill the GPU (x is split into
// bf16 terms once for a block's row tiles: at one token that split costs as
// much as the codes), with fewer steps in flight as the tiles' registers grow.
template <int Bits, int GS, bool Split>
void LaunchShape(MlxWeights ws, int64_t n, const float* x, bool xvec, cudaStream_t s) {
  const int nt = n <= 8 ? 1 : n <= 16 ? 2 : 4;
  const int64_t token_tiles = (n + nt * 8 - 1) / (nt * 8);
  int64_t rows = 0;
  for (int k = 0; k < ws.count; ++k) rows += ws.w[k].rows;
  int rt = nt == 1 ? 4 : 2;
  while (rt > 1 && token_tiles * (rows / (kTileRows * rt)) < kMinBlocks) rt /= 2;
  ws.first[0] = 0;
  for (int k = 0; k < ws.count; ++k) {
    ws.first[k + 1] = ws.first[k] + (ws.w[k].rows + kTileRows * rt - 1) / (kTileRows * rt);
  }
  const dim3 grid(static_cast<unsigned>(token_tiles), static_cast<unsigned>(ws.first[ws.count]));
  constexpr int kThreads = kWarps * 32;
  // One token tile (the latency-bound case) may pipeline its loads: half the
  // steps a buffer, two buffers (U does not change the sums).
  const bool pipe = nt == 1 && MlxPipelineEnabled();
  const bool early = EarlyWeightLoadsEnabled();
  switch (nt * 8 + rt + (pipe ? 64 : 0)) {
    case 1 * 8 + 1: LaunchPdl(MmaMlxKernel<1, 1, 4, Bits, GS, Split, false>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
    case 1 * 8 + 2: LaunchPdl(MmaMlxKernel<1, 2, 2, Bits, GS, Split, false>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
    case 1 * 8 + 4: LaunchPdl(MmaMlxKernel<1, 4, 1, Bits, GS, Split, false>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
    case 64 + 1 * 8 + 1: LaunchPdl(MmaMlxKernel<1, 1, 2, Bits, GS, Split, true>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
    case 64 + 1 * 8 + 2: LaunchPdl(MmaMlxKernel<1, 2, 1, Bits, GS, Split, true>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
    case 64 + 1 * 8 + 4: LaunchPdl(MmaMlxKernel<1, 4, 1, Bits, GS, Split, true>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
    case 2 * 8 + 1: LaunchPdl(MmaMlxKernel<2, 1, 2, Bits, GS, Split, false>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
    case 2 * 8 + 2: LaunchPdl(MmaMlxKernel<2, 2, 1, Bits, GS, Split, false>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
    case 4 * 8 + 1: LaunchPdl(MmaMlxKernel<4, 1, 1, Bits, GS, Split, false>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
    default: LaunchPdl(MmaMlxKernel<4, 2, 1, Bits, GS, Split, false>, grid, kThreads, 0, s, ws, x, n, xvec, early); break;
  }
}

bool Aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }

}  // namespace

bool MlxPipelineEnabled() {
  return EnvSwitch("LLMHOST_CUDA_MLX_PIPELINE", false);
}

bool MmaMlxRows(const DevWeight& w) {
  const int step = w.bits == 4 ? Layout<4>::kStepCols : Layout<8>::kStepCols;
  return w.fmt == WFmt::kMlx && (w.bits == 4 || w.bits == 8) && (w.group_size == 32 || w.group_size == 64) &&
         w.rows > 0 && w.cols % step == 0 && w.row_bytes == w.cols * w.bits / 8 &&
         (w.scale_type == Elem::kBF16 || w.scale_type == Elem::kF16) && Aligned(w.data, 16) &&
         Aligned(w.scales, 8) && Aligned(w.biases, 8);
}

void LaunchMmaMlxMatMul(const DevWeight* w, float* const* y, int count, const float* x, int64_t n, bool split,
                        cudaStream_t s) {
  if (n <= 0 || count < 1 || count > kMaxWeights) return;
  MlxWeights ws;
  ws.count = count;
  for (int k = 0; k < count; ++k) {
    ws.w[k] = w[k];
    ws.y[k] = y[k];
  }
  // x rows are cols * 4 bytes apart, a multiple of 512 here: aligned rows when the first is.
  const bool xvec = Aligned(x, 16);
  const bool g32 = w[0].group_size == 32;
  if (w[0].bits == 4) {
    if (g32) {
      split ? LaunchShape<4, 32, true>(ws, n, x, xvec, s) : LaunchShape<4, 32, false>(ws, n, x, xvec, s);
    } else {
      split ? LaunchShape<4, 64, true>(ws, n, x, xvec, s) : LaunchShape<4, 64, false>(ws, n, x, xvec, s);
    }
  } else if (g32) {
    split ? LaunchShape<8, 32, true>(ws, n, x, xvec, s) : LaunchShape<8, 32, false>(ws, n, x, xvec, s);
  } else {
    split ? LaunchShape<8, 64, true>(ws, n, x, xvec, s) : LaunchShape<8, 64, false>(ws, n, x, xvec, s);
  }
}

}  // namespace llmhost::cuda
