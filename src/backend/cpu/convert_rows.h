// Rows of floats to and from the 16-bit KV cache types (bf16, f16), rounding
// to nearest even; AVX2 + F16C where the CPU has them, the scalar
// conversions of matmul.h otherwise: both give the same bits.
#pragma once

#include <cstdint>

#include "formats/dtype.h"

namespace llmhost::cpu {

// t: DType::kBF16 or DType::kF16.
void FloatsToHalves(const float* in, uint16_t* out, int64_t n, DType t);
void HalvesToFloats(const uint16_t* in, float* out, int64_t n, DType t);

namespace internal {
void FloatsToHalvesAvx2(const float* in, uint16_t* out, int64_t n, DType t);
void HalvesToFloatsAvx2(const uint16_t* in, float* out, int64_t n, DType t);
}  // namespace internal

}  // namespace llmhost::cpu
