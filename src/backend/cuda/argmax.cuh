// A row's greedy token on the device, as the sampler reads it on the host
// (cpu::FiniteArgMax), so that a step of greedy rows sends back ids, not logits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmhost::cuda {

// out[r] = the lowest index of row r's largest value (NaN skipped), or -1
// where that value is not finite; x is [rows, cols].
void LaunchArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out, cudaStream_t s);

}  // namespace llmhost::cuda
