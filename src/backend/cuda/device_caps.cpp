#include "backend/cuda/device_caps.h"

#include <cuda_runtime_api.h>

#include <atomic>

namespace llmhost::cuda {
namespace {

constexpr int kDevices = 64;

// The current device's attribute `attr`, read from the driver once per device
// and cached (each caller keeps its own cache); -1 where the driver does not
// say.
int CachedAttribute(cudaDeviceAttr attr, std::atomic<int> (&cache)[kDevices]) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) return -1;
  int v = cache[dev].load(std::memory_order_relaxed);  // 0 unknown, else the value + 1
  if (v == 0) {
    int value = 0;
    if (cudaDeviceGetAttribute(&value, attr, dev) != cudaSuccess) return -1;
    v = value + 1;
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v - 1;
}

}  // namespace

bool HopperOrNewer() {
#if defined(LLMHOST_CUDA_MAX_ARCH) && LLMHOST_CUDA_MAX_ARCH < 90
  return false;  // the kernels were built without Hopper's instructions (a Hopper GPU runs them by JIT)
#else
  static std::atomic<int> cache[kDevices];
  return CachedAttribute(cudaDevAttrComputeCapabilityMajor, cache) >= 9;
#endif
}

int MaxSharedPerBlock() {
  static std::atomic<int> cache[kDevices];
  const int bytes = CachedAttribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, cache);
  return bytes < 0 ? 0 : bytes;
}

int MaxSharedPerSm() {
  static std::atomic<int> cache[kDevices];
  const int bytes = CachedAttribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, cache);
  return bytes < 0 ? 0 : bytes;
}

}  // namespace llmhost::cuda
