// The pieces of the MLX tensor-core GEMVs (matmul_mma_mlx.cu, and the
// streamed one for a few tokens, matmul_mma_mlx_stream.cu) that both compute
// with, so that they give the same bits: a step's layout, codes as exact
// bf16 pairs, x's terms, the lanes' regrouping of words into groups, and
// the groups' 16-bit scales and biases.
#pragma once

#include "backend/cuda/common.cuh"
#include "backend/cuda/mma_bf16.cuh"

namespace llmhost::cuda {

constexpr int kMlxTileRows = 15;  // weight rows of a 16-row MMA tile; row 15 is the ones row

// A step is 64 bytes of a row (16 a lane, four 32-bit words): 128 columns
// of 4-bit codes or 64 of 8-bit ones.
template <int Bits>
struct Layout {
  static constexpr int kWordCols = 32 / Bits;
  static constexpr int kStepCols = 16 * kWordCols;
  static constexpr int kPairs = kWordCols / 2;  // bf16 pairs of a word; an MMA takes two
  static constexpr uint32_t kOnes = Bits == 4 ? 0x11111111u : 0x01010101u;  // codes of 1: the ones row
};

using MlxWeights = MmaWeights;  // weight i's first block (or row tile) in first[i]

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

// x's columns of a word's codes (v: kWordCols values), paired as Codes pairs
// them: split into bf16 terms (hi, and lo with Split).
template <int Bits, bool Split>
__device__ __forceinline__ void XTermsOf(const float (&v)[Layout<Bits>::kWordCols], uint32_t (&h)[Layout<Bits>::kPairs],
                                         uint32_t (&l)[Layout<Bits>::kPairs]) {
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

// The same from x in global memory (zeros for a padding token), split once
// for every row tile.
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
  XTermsOf<Bits, Split>(v, h, l);
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

}  // namespace llmhost::cuda
