// CPU matrix multiplication and dequantization over stored weight formats.
//
//   y[n, w.rows] = x[n, w.cols] · Wᵀ      (x, y: row-major f32)
//
// Two precisions:
//   kReference  every weight dequantized exactly to f32 (MLX: scale*q + bias
//               in f32; GGUF: as ggml dequantizes), products summed in f32.
//               The path the golden tests hold to 1e-4 relative error.
//   kFast       SIMD kernels chosen at run time for this CPU (AVX2/FMA,
//               AVX-512 where present); GGUF types may quantize activations
//               as ggml does. Error documented per format in the tests.
#pragma once

#include <cstdint>

#include "backend/weight_matrix.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace llmhost {

enum class MatMulPrecision {
  kReference,
  kFast,
  // As kFast for F32/F16/BF16 weights; for quantized weights (MLX, GGUF
  // blocks) the activations are rounded to int8 per 32 values and multiplied
  // with the integer codes, as ggml does: 2-3x faster decoding of 4-bit
  // weights, at about 0.5% relative error per output (bound and order in
  // matmul_int8_avx2.cpp). Batch invariant like kFast.
  kFastInt8,
};

// True when this build can compute with `w` (format, type, shape consistent).
Status CheckWeight(const WeightMatrix& w);

// Dequantizes rows [row_begin, row_end) to f32: out[(row_end-row_begin) * cols].
void DequantizeRows(const WeightMatrix& w, int64_t row_begin, int64_t row_end, float* out);

// y = x · Wᵀ. `pool` may be null (single-threaded).
void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, MatMulPrecision precision,
            ThreadPool* pool);

// Scalar conversions used across the backend.
float Bf16ToF32(uint16_t v);
float F16ToF32(uint16_t v);
uint16_t F32ToBf16(float v);  // round to nearest even
uint16_t F32ToF16(float v);   // round to nearest even

}  // namespace llmhost
