// y[n, rows] = x[n, cols] · Wᵀ on the tensor cores, in f16 with f32 sums.
// Each row of x is scaled by a power of two (its largest magnitude brought to
// ~2^14, so no value overflows and small rows keep f16's 11 bits) and rounded
// to f16 once (LaunchRowsToF16); W is read in its stored format and rounded to
// f16 (exact for f16 weights, and for bf16 ones within f16's normal range);
// the sums are scaled back exactly. Products are summed by 16-wide k-steps in
// column order, with no split-K and no reduction across rows, so a row's bits
// depend on its own token and the weight only: batch invariant at every size.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"

namespace llmhost::cuda {

// Bytes of the scratch LaunchTensorCoreMatMul needs for n rows of cols.
int64_t TensorCoreScratchBytes(int64_t n, int64_t cols);

// `scratch`: device memory of TensorCoreScratchBytes(n, w.cols) bytes.
void LaunchTensorCoreMatMul(const DevWeight& w, const float* x, int64_t n, float* y, void* scratch, cudaStream_t s);

}  // namespace llmhost::cuda
