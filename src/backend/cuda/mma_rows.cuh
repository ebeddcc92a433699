// What the bf16 tensor-core GEMVs share (matmul_mma.cu for up to 8 tokens,
// matmul_mma_wide.cu past that): the launch's weights, a 16-byte chunk's
// MMAs and the split of x into bf16 terms. Both kernels go through these, so
// that a token's sum is the same MMAs in the same order in either.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"
#include "backend/cuda/mma_bf16.cuh"

namespace llmhost::cuda::mma_rows {

constexpr int kParts = 8;         // the columns' steps dealt over 8 parts (a part: every 8th step)
constexpr int kRows = 16;         // the MMA's m
constexpr int kStepCols = 64;     // columns per step: each lane's two 16-byte loads of a row
constexpr int kMaxWeights = 4;
constexpr int64_t kMinBlocks = 128;  // about one per SM of an H100 / H200

struct MmaWeights {
  DevWeight w[kMaxWeights];
  float* y[kMaxWeights];
  int64_t first[kMaxWeights + 1];  // weight i's first block
  int count = 0;
};

// The weight of block row `by` (blockIdx.y): blocks of every weight side by side.
__device__ __forceinline__ int WeightOf(const MmaWeights& ws, int64_t by) {
  int i = 0;
  while (i + 1 < ws.count && by >= ws.first[i + 1]) ++i;
  return i;
}

// One 16-byte chunk of rows g and g + 8 (wa, wb) against the same 8 columns
// of x (its bf16 terms h, and l with Split): the chunk's columns 0-3 are k
// 2c, 2c+1, 2c+8, 2c+9 of the first MMA, 4-7 of the second. Every launch
// shape adds the terms in this order: first half hi, lo; second half hi, lo.
template <bool Split>
__device__ __forceinline__ void MmaChunk(const uint4& wa, const uint4& wb, const uint32_t (&h)[4],
                                         const uint32_t (&l)[4], float (&acc)[4]) {
  Mma(acc, wa.x, wb.x, wa.y, wb.y, h[0], h[1]);
  if constexpr (Split) Mma(acc, wa.x, wb.x, wa.y, wb.y, l[0], l[1]);
  Mma(acc, wa.z, wb.z, wa.w, wb.w, h[2], h[3]);
  if constexpr (Split) Mma(acc, wa.z, wb.z, wa.w, wb.w, l[2], l[3]);
}

template <bool Split>
__device__ __forceinline__ void SplitX8(const float (&xv)[8], uint32_t (&h)[4], uint32_t (&l)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if constexpr (Split) {
      SplitPair(xv[2 * j], xv[2 * j + 1], &h[j], &l[j]);
    } else {
      h[j] = PackBf16(xv[2 * j], xv[2 * j + 1]);
      l[j] = 0;
    }
  }
}

// Lane c's 16-byte chunk ch (8 columns) of a 64-column step: 2c + ch, so
// that the four lanes of a row read its 128-byte line. (c + 4 ch, whole
// 32-byte sectors a load instruction, measured 1% slower at one token and
// 1-3% faster at 8-128 on an H100.) x's columns follow.
__host__ __device__ constexpr int ChunkOf(int c, int ch) { return 2 * c + ch; }
__host__ __device__ constexpr int ChunkCols(int c, int ch) { return 8 * ChunkOf(c, ch); }
// ChunkOf's inverse: the lane c and chunk ch that read 8-column chunk q.
__host__ __device__ constexpr int ChunkLane(int q) { return q >> 1; }
__host__ __device__ constexpr int ChunkHalf(int q) { return q & 1; }
constexpr bool ChunkOfInverts() {
  for (int c = 0; c < 4; ++c) {
    for (int ch = 0; ch < 2; ++ch) {
      if (ChunkLane(ChunkOf(c, ch)) != c || ChunkHalf(ChunkOf(c, ch)) != ch) return false;
    }
  }
  return true;
}
static_assert(ChunkOfInverts(), "ChunkLane and ChunkHalf must follow ChunkOf");

// The steps a block walks, in order: a whole walk of `steps` (≥ 8) takes
// part 0's (0, 8, 16, ...), then part 1's, ...; a cluster's block z part z's
// alone. Advanced one step at a time (no division in the loop).
struct Walk {
  int part, k, len;  // the current step: the k-th of its part's len
  int per, longer;   // parts < longer have per + 1 steps, the others per
  bool whole;
  __device__ Walk(int steps, int z, bool whole_walk)
      : part(whole_walk ? 0 : z), k(0), per(steps / kParts), longer(steps % kParts), whole(whole_walk) {
    len = per + (part < longer ? 1 : 0);
  }
  __device__ int Step() const { return part + k * kParts; }
  __device__ bool Last() const { return k == len - 1; }  // the part's last step
  __device__ void Next() {
    if (++k == len && whole) {
      ++part, k = 0;
      len = per + (part < longer ? 1 : 0);
    }
  }
};

// The wide kernel for n > 8 tokens (matmul_mma_wide.cu); false where it does
// not take this launch (x not 16-byte aligned, fewer than 8 steps,
// LLMHOST_CUDA_MMA_WIDE=off read at each launch, or a GPU before Hopper),
// and the caller's kernel runs instead.
bool LaunchWide(MmaWeights ws, int64_t n, const float* x, bool split, cudaStream_t s);

// The GEMM-shaped kernel for a large batch (matmul_mma_gemm.cu): whether it
// takes `n` tokens of `w` (bf16, at least 8 steps, from LLMHOST_CUDA_GEMM_FROM
// tokens (97), Hopper, LLMHOST_CUDA_MMA_GEMM=on: opt-in, slower so far); the scratch its launch
// needs for x's bf16 terms (0 where it does not take them); and the launch,
// false where it declines (the caller's kernel runs instead: the same sums).
bool GemmTakes(const DevWeight& w, int64_t n);
int64_t GemmTermsBytes(const DevWeight* w, int count, int64_t n, bool split);
bool LaunchGemm(MmaWeights ws, int64_t n, const float* x, uint16_t* terms, bool split, cudaStream_t s);

// The GEMM on Hopper's warpgroup MMA (matmul_wgmma.cu, sm_90a): the same
// sums. WgmmaTermsBytes: the scratch it needs for n tokens of the `count`
// weights w (0 where it does not take them); LaunchWgmmaGemm: false where it
// does not take the launch.
int64_t WgmmaTermsBytes(const DevWeight* w, int count, int64_t n, bool split);
bool LaunchWgmmaGemm(MmaWeights ws, int64_t n, const float* x, uint16_t* terms, bool split, cudaStream_t s);

}  // namespace llmhost::cuda::mma_rows
