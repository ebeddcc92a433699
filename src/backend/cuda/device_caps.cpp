#include "backend/cuda/device_caps.h"

#include <cuda_runtime_api.h>

#include <atomic>

namespace llmhost::cuda {

bool HopperOrNewer() {
#if defined(LLMHOST_CUDA_MAX_ARCH) && LLMHOST_CUDA_MAX_ARCH < 90
  return false;  // the kernels were built without Hopper's instructions (a Hopper GPU runs them by JIT)
#else
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices];  // 0 unknown, 1 older, 2 Hopper or newer
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) return false;
  int v = cache[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
    v = major >= 9 ? 2 : 1;
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v == 2;
#endif
}

int MaxSharedPerBlock() {
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices];  // 0 unknown, else bytes + 1
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) return 0;
  int v = cache[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    int bytes = 0;
    if (cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) return 0;
    v = bytes + 1;
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v - 1;
}

}  // namespace llmhost::cuda
