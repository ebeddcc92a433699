// Hopper's warpgroup MMA (wgmma), shared by the kernels built for sm_90a
// (the files CMake compiles for compute_90a alone): the ordering
// instructions and the shared-memory operand descriptor. Device code exists
// only where the compiler targets sm_90a (LLMHOST_WGMMA_DEVICE); the host
// checks the GPU (Sm90aDevice) before a launch.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LLMHOST_WGMMA_DEVICE 1
#endif

namespace llmhost::cuda {

// Whether this device runs sm_90a code (compute capability 9.0, and the
// binary built with it).
bool Sm90aDevice();

#if defined(LLMHOST_WGMMA_DEVICE)
// Before the first wgmma that reads registers other instructions wrote (its
// accumulators or A fragments).
__device__ __forceinline__ void WgFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Until at most N committed groups are in flight.
template <int N>
__device__ __forceinline__ void WgWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// This thread's generic-proxy writes to shared memory (plain stores,
// cp.async) made visible to wgmma's reads, which go through the async proxy.
__device__ __forceinline__ void AsyncProxyFence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// A no-swizzle operand in shared memory: its address / 16 (bits 0-13), the
// leading byte offset / 16 (bits 16-29) and the stride byte offset / 16
// (bits 32-45), swizzle bits 62-63 zero. The matrix is made of core matrices
// of 8 rows x 16 bytes, each 128 contiguous bytes. K-major (B's rows are N):
// leading = between the two core matrices of a k16 step, stride = between
// 8-row groups. MN-major (B transposed: its rows are K, 16 bytes of N
// contiguous): leading = between 8-row groups of K, stride = between
// 8-column groups of N.
__device__ __forceinline__ uint64_t WgDesc(uint32_t shared_addr, uint32_t leading, uint32_t stride) {
  return static_cast<uint64_t>((shared_addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(leading >> 4) << 16) |
         (static_cast<uint64_t>(stride >> 4) << 32);
}
#endif

}  // namespace llmhost::cuda
