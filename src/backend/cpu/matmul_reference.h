// The f32 reference matmul: each weight row dequantized exactly (scalar code),
// each output a sequential f32 sum over k. Slow and simple; the path the
// golden tests hold to 1e-4, and the fallback where no SIMD kernels exist.
#pragma once

#include <cstdint>

#include "backend/weight_matrix.h"
#include "util/thread_pool.h"

namespace llmhost::cpu {

// y[n, w.rows] = x[n, w.cols] · Wᵀ; `w` must have passed CheckWeight.
void ReferenceMatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool* pool);

}  // namespace llmhost::cpu
