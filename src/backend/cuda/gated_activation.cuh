// out[r, c] = act(gate[r, c]) * up[r, c] (SiLU or GELU-tanh in f64, as the
// CPU reference).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cuda {

void LaunchGatedActivation(Activation act, const float* gate, int64_t gate_stride, const float* up,
                           int64_t up_stride, int64_t rows, int64_t cols, float* out, int64_t out_stride,
                           cudaStream_t s);

}  // namespace llmhost::cuda
