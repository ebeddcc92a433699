// Rows of floats to and from the KV cache's narrow types (bf16, f16, FP8
// e4m3), rounding to nearest even (e4m3 saturating at +-448); AVX2 + F16C
// where the CPU has them, the scalar conversions of matmul.h otherwise: both
// give the same bits.
#pragma once

#include <cstdint>

#include "formats/dtype.h"

namespace llmhost::cpu {

// t: DType::kBF16 or DType::kF16.
void FloatsToHalves(const float* in, uint16_t* out, int64_t n, DType t);
void HalvesToFloats(const uint16_t* in, float* out, int64_t n, DType t);

// Row `n` elements long at element `offset` of a cache of type t (F32, BF16,
// F16 or F8_E4M3).
void FloatsToKv(const float* in, void* cache, int64_t offset, int64_t n, DType t);
void KvToFloats(const void* cache, int64_t offset, float* out, int64_t n, DType t);

namespace internal {
void FloatsToHalvesAvx2(const float* in, uint16_t* out, int64_t n, DType t);
void HalvesToFloatsAvx2(const uint16_t* in, float* out, int64_t n, DType t);
}  // namespace internal

}  // namespace llmhost::cpu
