// f32 activations as bf16 for the 16-bit GEMMs: hi = bf16(x) and, where a
// second product restores the bits bf16 drops, lo = bf16(x - hi) (both
// rounded to nearest even): hi + lo carries ~16 bits of x's mantissa.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmhost::cuda {

// `lo` may be null (hi only).
void LaunchSplitBf16(const float* x, int64_t count, uint16_t* hi, uint16_t* lo, cudaStream_t s);

}  // namespace llmhost::cuda
