// Device helpers shared by the kernels: element loads of every 16-bit type
// (bit-exact widening), the CPU's rounding to 16 bits, warp sums in a fixed
// order, and the dispatch over K/V element types.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "backend/cuda/device_caps.h"
#include "backend/cuda/elem.h"
#include "backend/cuda/env_switch.h"

namespace llmhost::cuda {

__device__ __forceinline__ float Bf16ToF32(uint16_t h) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }

__device__ __forceinline__ float F16ToF32(uint16_t h) {
  return __half2float(__ushort_as_half(h));
}

// An FP8 e4m3 ("fn") code, widened exactly as the CPU's Fp8E4M3ToF32: normal
// codes move their fields into f32's, subnormals are m * 2^-9, 0x7F is NaN.
__device__ __forceinline__ float Fp8E4M3ToF32(uint32_t code) {
  const uint32_t mag = code & 0x7Fu;
  float a = mag < 8 ? __fmul_rn(static_cast<float>(mag), 1.0f / 512) : __uint_as_float((mag << 20) + (120u << 23));
  if (mag == 0x7Fu) a = __uint_as_float(0x7FC00000u);
  return (code & 0x80u) ? -a : a;
}

// Rounded to nearest even, NaN kept quiet: the same bits as the CPU's
// F32ToBf16 / F32ToF16 (backend/cpu/quant_float.cpp), so that a K/V row
// stored on either backend is the same bytes.
__device__ __forceinline__ uint16_t F32ToBf16Bits(float v) {
  uint32_t bits = __float_as_uint(v);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

__device__ __forceinline__ uint16_t F32ToF16Bits(float v) {
  const uint32_t x = __float_as_uint(v);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7E00;
  return __half_as_ushort(__float2half_rn(v));  // IEEE round to nearest even, as the CPU's
}

// FP8 e4m3, rounded to nearest even and saturated at +-448: the bits of the
// CPU's F32ToFp8E4M3.
__device__ __forceinline__ uint8_t F32ToFp8Bits(float v) {
  const uint32_t x = __float_as_uint(v);
  const uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7F;
  if (ax >= 0x43E80000u) return sign | 0x7E;
  if (ax < 0x3C800000u) return sign | static_cast<uint8_t>(__float2int_rn(__fmul_rn(__uint_as_float(ax), 512.0f)));
  const uint32_t r = ax + 0x7FFFFu + ((ax >> 20) & 1u);
  return sign | static_cast<uint8_t>((((r >> 23) - 120u) << 3) | ((r >> 20) & 7u));
}

template <Elem E>
__device__ __forceinline__ float Load(const void* base, int64_t i) {
  if constexpr (E == Elem::kF32) {
    return static_cast<const float*>(base)[i];
  } else if constexpr (E == Elem::kBF16) {
    return Bf16ToF32(static_cast<const uint16_t*>(base)[i]);
  } else if constexpr (E == Elem::kF8) {
    return Fp8E4M3ToF32(static_cast<const uint8_t*>(base)[i]);
  } else {
    return F16ToF32(static_cast<const uint16_t*>(base)[i]);
  }
}

// Element `at` of a K/V cache of type E set to v, rounded as the CPU rounds.
template <Elem E>
__device__ __forceinline__ void StoreElem(void* cache, int64_t at, float v) {
  if constexpr (E == Elem::kF32) {
    static_cast<float*>(cache)[at] = v;
  } else if constexpr (E == Elem::kBF16) {
    static_cast<uint16_t*>(cache)[at] = F32ToBf16Bits(v);
  } else if constexpr (E == Elem::kF8) {
    static_cast<uint8_t*>(cache)[at] = F32ToFp8Bits(v);
  } else {
    static_cast<uint16_t*>(cache)[at] = F32ToF16Bits(v);
  }
}

// Programmatic dependent launch (Hopper): a kernel launched by LaunchPdl may
// be scheduled while the kernel before it in the stream still runs, and
// waits in WaitForPriorGrid (its first statement) until that one has
// finished and its writes are visible. What overlaps is the launch and the
// blocks' start-up, a few microseconds per kernel in a decode step of
// hundreds. LLMHOST_CUDA_PDL=off launches them plainly (the wait is then a
// no-op). The next kernel is scheduled when this one ends: letting it be
// scheduled once this one is past its wait (griddepcontrol.launch_dependents)
// measured b1 unchanged and 32 sequences 6.5% slower on an H100 (its waiting
// blocks hold SMs), so kernels do not trigger early. Before Hopper (a build
// for sm_80-89) there is no such launch: kernels start after the one before
// them, and the wait is nothing.
__device__ __forceinline__ void WaitForPriorGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Lets the next kernel be scheduled now (it still waits in WaitForPriorGrid
// for this one's end): for a small kernel whose successor has work that does
// not depend on it (a GEMV's weight loads).
__device__ __forceinline__ void LaunchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

inline bool PdlEnabled() {
  static const bool on = EnvSwitch("LLMHOST_CUDA_PDL", true);
  return on;
}

// LaunchPdl for blocks in clusters of `cluster` (Hopper; dim3(1, 1, 1): none).
template <typename... Params, typename... Args>
void LaunchPdlCluster(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, dim3 cluster, cudaStream_t s,
                      Args&&... args) {
  cudaLaunchAttribute attrs[2];
  int count = 0;
  if (PdlEnabled() && HopperOrNewer()) {
    attrs[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attrs[count].id = cudaLaunchAttributeClusterDimension;
    attrs[count].val.clusterDim.x = cluster.x;
    attrs[count].val.clusterDim.y = cluster.y;
    attrs[count++].val.clusterDim.z = cluster.z;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attrs;
  cfg.numAttrs = count;
  cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);  // errors: the caller's cudaGetLastError
}

template <typename... Params, typename... Args>
void LaunchPdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  LaunchPdlCluster(kernel, grid, block, smem, dim3(1, 1, 1), s, std::forward<Args>(args)...);
}

__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes into shared memory without a register round trip; zeros when
// !valid (a key past the sequence's end may be any bytes, NaN included).
__device__ __forceinline__ void CopyAsync16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(SharedAddress(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void CopyAsyncCommit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void CopyAsyncWait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Sum over the 32 lanes, the same butterfly whatever the launch: every lane
// gets the same bits.
__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

// Instantiates `body.template operator()<E>()` for the K/V element type `e`.
template <typename Body>
void ForElem(Elem e, Body&& body) {
  switch (e) {
    case Elem::kF32: body.template operator()<Elem::kF32>(); break;
    case Elem::kF16: body.template operator()<Elem::kF16>(); break;
    case Elem::kBF16: body.template operator()<Elem::kBF16>(); break;
    case Elem::kF8: body.template operator()<Elem::kF8>(); break;
  }
}

}  // namespace llmhost::cuda
