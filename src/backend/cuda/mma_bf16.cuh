// The pieces of the tensor-core GEMVs (matmul_mma.cu: bf16 weights,
// matmul_mma_mlx.cu: MLX 4/8-bit) that both kernels compute with, so that x
// becomes the same bf16 terms in either: the m16n8k16 MMA, bf16 packing and
// the hi + rest split of f32 activations; and 8 columns of x.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace llmhost::cuda {

// D += A · B, m16n8k16, bf16 in, f32 accumulate. Lane (g, c) = (lane / 4,
// lane % 4) holds A's rows g (a0, a2) and g + 8 (a1, a3) at k 2c, 2c + 1 (a0,
// a1) and 2c + 8, 2c + 9 (a2, a3), B's column g at the same k (b0, b1), and
// D's rows g (d0, d1) and g + 8 (d2, d3) at columns 2c, 2c + 1.
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

}  // namespace llmhost::cuda
