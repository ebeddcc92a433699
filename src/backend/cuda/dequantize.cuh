// Quantized weights widened to bf16 on the device, for prompt rows: a
// tensor-core GEMM (cuBLASLt) over the widened copy outruns multiplying the
// codes in place once a prompt has more than a few rows.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/elem.h"

namespace llmhost::cuda {

// MLX affine, FP8 and the GGUF block formats the kernels read (a property
// of the weight alone); plain floats are not widened (f16 would lose bits).
bool DequantizableToBf16(const DevWeight& w);

// out[rows][cols] (16-byte aligned; cols a multiple of 8) = each weight
// exactly as the f32 kernels read it (LoadW), rounded to bf16 (to nearest even).
void LaunchDequantizeBf16(const DevWeight& w, uint16_t* out, cudaStream_t s);

}  // namespace llmhost::cuda
