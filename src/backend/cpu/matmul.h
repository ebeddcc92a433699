// CPU matrix multiplication and dequantization over stored weight formats.
//
//   y[n, w.rows] = x[n, w.cols] · Wᵀ      (x, y: row-major f32)
//
// Precisions:
//   kReference  every weight dequantized exactly to f32 (MLX: scale*q + bias
//               in f32; GGUF: as ggml dequantizes), products summed in f32,
//               sequentially. The path the golden tests hold to 1e-4.
//   kFast       SIMD kernels chosen at run time (AVX2 + FMA + F16C; CPUs
//               without them run the reference). The same exact f32 weights,
//               summed in 8 lanes: within ~2e-6 of the reference
//               (matmul_fast_test.cpp).
//   kFastInt8   below: int8 activations for quantized weights.
// Every precision is batch invariant: a row of x gives bit-identical outputs
// alone or inside any batch, with or without a thread pool (kernel order in
// matmul_kernels.h; tested bit for bit).
//
// Scratch: the fast paths keep grow-only per-thread buffers: the packed or
// quantized copy of at most 512 rows of x on the calling thread (512 * cols
// floats for kFast; 512 * cols * 1.5-2.5 bytes for kFastInt8), a 24 x 256
// weight panel and ~200 KB of accumulators on each worker, and for kFastInt8
// the f32 scales of 32 weight rows (~2 * 32 * cols / 32 floats) and a few KB;
// nothing else.
#pragma once

#include <cstdint>

#include "backend/weight_matrix.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace llmhost {

// kFastBf16 uses AMX tiles for batches of at least this many rows.
inline constexpr int64_t kAmxMinRows = 16;

enum class MatMulPrecision {
  kReference,
  kFast,
  // As kFast for F32/F16/BF16 weights; for quantized weights (MLX, GGUF
  // blocks) the activations are rounded to int8 per 32 values and multiplied
  // with the integer codes, as ggml does: about 0.5% relative error per
  // output (bound in matmul_int8_avx2.cpp), in exchange for integer dot
  // products (4-bit weights: decode at the memory bandwidth, prefill ~1.5x
  // the f32 FMA path on AVX2; figures in docs/benchmarks.md). MLX 4/8-bit
  // and Q4_0 with cols % 128 == 0 run register-blocked kernels
  // (matmul_int8_unit_avx2.cpp), the rest matmul_int8_avx2.cpp; the choice
  // depends on the weight only. Batch invariant like kFast.
  kFastInt8,
  // For prefill on CPUs with a bf16 matmul (HasBf16Matmul: AMX or AVX512_BF16): batches of
  // at least kAmxMinRows rows round x and the weights to bf16 (weights of
  // bf16 files are exact) and multiply them in AMX tiles, products exact and
  // summed in f32 (matmul_amx.cpp): 2^-9 relative error per activation,
  // ~0.1-0.3% per output (bounds in matmul_amx_test.cpp), every weight
  // format. Smaller batches (decode, memory-bound) run kFast, which reads
  // quantized weights faster than a bf16 panel can be built. Batch invariant
  // among batches of >= kAmxMinRows rows and among smaller ones, not across
  // the two: a row's bits depend on which side of the threshold its batch
  // falls (differences at the bf16-rounding level). Elsewhere: kFast.
  kFastBf16,
  // As kFastBf16 at every batch size (a batch of fewer than 16 rows pads its
  // one tile block): batch invariant among all batches, for the prompt rows
  // of Precision::kAuto. Elsewhere: kFast.
  kBf16Tiles,
};

// OK when this build can compute with `w`: a supported format (MLX bits 2-6
// or 8, groups 32/64/128, BF16/F16/F32 scales; GGUF F32/F16/BF16, Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q8_K) and a consistent shape
// (cols a multiple of the group or block; pointers present). Otherwise
// InvalidArgument or NotSupported naming the shape and the problem. Call it
// once when a weight is loaded; the functions below assume it passed (they
// re-check cheaply and write NaN instead of reading out of bounds).
Status CheckWeight(const WeightMatrix& w);

// Dequantizes rows [row_begin, row_end) exactly to f32:
// out[(row_end-row_begin) * cols] (NaN for a bad weight or range), columns in
// their stored order (see WeightMatrix::col_order).
void DequantizeRows(const WeightMatrix& w, int64_t row_begin, int64_t row_end, float* out);

// y = x · Wᵀ. `pool` may be null (single-threaded). x: n * cols floats, y:
// n * rows floats, not overlapping. A weight CheckWeight refuses gets NaN
// outputs and its error back.
Status MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, MatMulPrecision precision,
            ThreadPool* pool);

// Scalar conversions used across the backend.
float Bf16ToF32(uint16_t v);
float F16ToF32(uint16_t v);
uint16_t F32ToBf16(float v);  // round to nearest even
uint16_t F32ToF16(float v);   // round to nearest even
// FP8 e4m3 ("fn": no infinities; 0x7F and 0xFF are NaN, 448 the largest).
float Fp8E4M3ToF32(uint8_t v);   // exact
uint8_t F32ToFp8E4M3(float v);   // round to nearest even, saturating at +-448

}  // namespace llmhost
