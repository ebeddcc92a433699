// What the current CUDA device can do beyond the sm_80 baseline the kernels
// are written for (a build for sm_80-89 runs them without these).
#pragma once

namespace llmhost::cuda {

// Hopper or newer (compute capability 9.0+) and kernels built for it
// (LLMHOST_CUDA_ARCHS reaching 90): programmatic dependent launch and
// thread-block clusters. Read from the driver once per device, then cached
// (the backend reads it when it starts, outside any graph capture).
bool HopperOrNewer();

// The most shared memory a block of the current device may opt in to (bytes;
// 0 where the driver does not say). Cached per device as HopperOrNewer.
int MaxSharedPerBlock();

// The shared memory an SM holds for all its blocks (bytes; 0 where the driver
// does not say): what a carveout's percentage is taken of. Cached the same way.
int MaxSharedPerSm();

}  // namespace llmhost::cuda
