// GPTQ, AWQ and FP8 checkpoints' matrices (formats/hf_quant.h) as the
// backends' weight formats, made once at load:
//
// - GPTQ, AWQ and compressed-tensors packed ints become MLX affine matrices (the bits of every kernel that
//   reads MLX): the codes repacked to one bit stream per output row, and per
//   group an f32 scale s and bias -s * z. With 16-bit scales, s * q and s * z
//   are exact in f32 and so is their difference, so w = s * q + (-s * z) is
//   the checkpoint's s * (q - z) to the bit. A GPTQ group larger than 128
//   columns (or one group per row) becomes MLX groups of 128, 64 or 32 with
//   the same scale and bias.
// - FP8 keeps its codes where they are (a view of the file) and gets per-row
//   f32 scales [rows, cols / group]: a per-tensor scale repeated, one per
//   output channel, or a block's scale repeated over its rows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/weight_matrix.h"
#include "formats/hf_quant.h"
#include "formats/safetensors.h"
#include "util/status.h"

namespace llmhost {

// A matrix made at load; `view` points into these buffers (and, for FP8,
// into the file's codes).
struct RepackedMatrix {
  std::vector<uint32_t> codes;
  std::vector<float> scales, biases;
  std::vector<int32_t> order;  // act-order GPTQ: the stored columns' input columns
  WeightMatrix view;
};

// `module` names the tensors in messages. rows = out_features, cols =
// in_features. g_idx may be null. An act-order g_idx (groups scattered over
// the inputs) stores the columns sorted by group (input order within one) and
// sets view.col_order; each group must then hold group_size columns.
Result<std::unique_ptr<RepackedMatrix>> RepackGptq(const HfQuantization& q, const std::string& module,
                                                   const TensorView& qweight, const TensorView& qzeros,
                                                   const TensorView& scales, const TensorView* g_idx, int64_t rows,
                                                   int64_t cols);
Result<std::unique_ptr<RepackedMatrix>> RepackAwq(const HfQuantization& q, const std::string& module,
                                                  const TensorView& qweight, const TensorView& qzeros,
                                                  const TensorView& scales, int64_t rows, int64_t cols);
// compressed-tensors pack-quantized: `zero_point` null when symmetric, g_idx
// null without an activation order (which is kept as RepackGptq keeps it).
Result<std::unique_ptr<RepackedMatrix>> RepackPacked(const HfQuantization& q, const std::string& module,
                                                     const TensorView& packed, const TensorView& scale,
                                                     const TensorView* zero_point, const TensorView* g_idx,
                                                     int64_t rows, int64_t cols);
// `scale_name` is the scale tensor's name (weight_scale or weight_scale_inv),
// for messages; its shape says per tensor, per channel, per group or per
// block (q's block size).
Result<std::unique_ptr<RepackedMatrix>> Fp8Matrix(const HfQuantization& q, const std::string& module,
                                                  const TensorView& weight, const TensorView& scale,
                                                  const std::string& scale_name, int64_t rows, int64_t cols);

}  // namespace llmhost
