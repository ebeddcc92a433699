// Loads of bytes a kernel reads once (a weight streamed by a GEMV).
#pragma once

#include <cuda_runtime.h>

namespace llmhost::cuda {

// 16 bytes past L1, which keeps what the block's warps share (x). Measured on
// an H100 with one chunk or step in flight a lane: 2-4% faster than __ldg for
// the int8 GEMV's codes, ~1% for the bf16 MMA GEMV's rows (with 4 steps in
// flight it was 5% slower there).
__device__ __forceinline__ uint4 LoadStreamed(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

}  // namespace llmhost::cuda
