// Bringing the next matmul's weight toward the SMs while small kernels run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace llmhost::cuda {

// Asks L2 for the first `bytes` of `p` (16-byte aligned) once the kernel
// before it has finished: fire and forget, no thread waits for the data.
void LaunchPrefetchL2(const void* p, size_t bytes, cudaStream_t s);

}  // namespace llmhost::cuda
