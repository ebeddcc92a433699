// WeightMatrix: a view of one weight matrix as it is stored (in a mapped
// model file, or in device memory once a backend has uploaded it).
//
// Shape convention: W is [rows = out_features, cols = in_features], row-major:
// row r holds the weights that produce output feature r. This is the layout
// of a Hugging Face Linear weight, of an MLX quantized weight, and of a GGUF
// matrix (ne[0] = cols is the fastest-varying dimension, ne[1] = rows).
// Embedding tables use the same convention: row = token id, cols = hidden.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/dtype.h"
#include "formats/gguf.h"

namespace llmhost {

enum class WeightFormat {
  kF32,        // data: float[rows * cols]
  kF16,        // data: IEEE half[rows * cols]
  kBF16,       // data: bfloat16[rows * cols]
  kMlxAffine,  // data: uint32[rows * cols * bits / 32]; for bits 2, 4, 8 value
               //   j of each word sits in its j-th lowest bit field (3, 5, 6
               //   bits: MLX's packing, documented in the kernel);
               //   scales, biases: [rows, cols / group_size] in scale_dtype;
               //   w = scale * q + bias, evaluated in f32.
  kGgml,       // data: ggml blocks of ggml_type, rows * (cols / block_size) blocks
  kFp8E4M3,    // data: uint8 e4m3 codes[rows * cols] (the "fn" variant: no
               //   infinities, S.1111.111 is NaN, 448 the largest value);
               //   scales: f32 [rows, cols / group_size]; w = scale * code,
               //   one f32 rounding. Per-tensor, per-channel and block scales
               //   of FP8 checkpoints all take this shape.
};

struct WeightMatrix {
  WeightFormat format = WeightFormat::kF32;
  int64_t rows = 0;  // out_features (or vocabulary size for embeddings)
  int64_t cols = 0;  // in_features (or hidden size)
  const void* data = nullptr;

  // kMlxAffine (and kFp8E4M3: group_size, scales, scale_dtype kF32).
  int bits = 0;
  int group_size = 0;
  const void* scales = nullptr;
  const void* biases = nullptr;
  DType scale_dtype = DType::kBF16;  // BF16, F16 or F32

  // kGgml only.
  GgmlType ggml_type = GgmlType::kF32;

  // Any format: when set, stored column j holds input column col_order[j]
  // (int32[cols], a permutation: act-order GPTQ, whose groups are scattered
  // over the inputs, stored with each group's columns together). A MatMul
  // gathers x into that order first; Embedding and the router take none, MoE
  // experts only on the CPU.
  const int32_t* col_order = nullptr;
};

}  // namespace llmhost
