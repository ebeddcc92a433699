// The quantized checkpoints of the Hugging Face layout that GPU servers load
// (config.json's `quantization_config`), as far as the loader needs them:
//
// - GPTQ (AutoGPTQ / GPTQModel, quant_method "gptq"): per Linear module
//   `qweight` int32 [in * bits / 32, out] (value j of word i is input row
//   i * 32 / bits + j, in bits [j * bits, (j + 1) * bits)), `qzeros` int32
//   [groups, out * bits / 32] (packed the same way along the outputs), `scales`
//   f16 [groups, out] and `g_idx` int32 [in] (each input row's group);
//   w[n][k] = scale[g][n] * (q[k][n] - zero[g][n]), where the stored zero is
//   one less than the true one in checkpoint_format "gptq" (v1) and exact in
//   "gptq_v2".
// - AWQ (AutoAWQ, quant_method "awq", version "gemm"): `qweight` int32
//   [in, out / 8], `qzeros` int32 [in / group, out / 8] with the eight 4-bit
//   values of a word in the order 0 2 4 6 1 3 5 7 (word nibble p holds output
//   column 8 * word + that order's p-th entry), `scales` f16 [in / group, out];
//   w = scale * (q - zero).
// - FP8 e4m3 weights: quant_method "fp8" (a block-scaled checkpoint with
//   `weight_block_size` and `weight_scale_inv`, or a per-tensor
//   `weight_scale`) and "compressed-tensors" in its "float-quantized" format
//   (`weight_scale` per tensor, per output channel or per block); w = weight *
//   scale. Activation scales (static FP8 activations) are not used: the
//   activations stay in f32.
// - compressed-tensors "pack-quantized" integer weights (W4A16 / W8A16):
//   `weight_packed` int32 [out, in * bits / 32] (value i of a word is input
//   column word * 32 / bits + i, stored unsigned: signed + 2^(bits-1)),
//   `weight_scale` [out, in / group] (or [out, 1] per channel), for
//   asymmetric schemes `weight_zero_point` int32 [out * bits / 32, groups]
//   packed the same way down the outputs, `weight_g_idx` with an activation
//   order, `weight_shape` [out, in]; w = scale * (q - zero), zero 2^(bits-1)
//   when symmetric.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

struct HfQuantization {
  enum class Method { kGptq, kAwq, kFp8, kPacked };  // kPacked: compressed-tensors pack-quantized
  Method method = Method::kGptq;
  int bits = 4;         // GPTQ / AWQ / packed: 4 or 8 (AWQ: 4)
  int group_size = 0;   // GPTQ / AWQ / packed: input rows per group; 0 for one group over all
  bool zeros_minus_one = true;  // GPTQ v1 stores zero - 1
  bool symmetric = true;        // packed: no weight_zero_point (zero 2^(bits-1))
  // FP8 block scales: rows and columns a scale covers (0: per tensor or per
  // channel, as the scale tensor's shape says). Which modules are quantized
  // is read from the tensors (a `.qweight`, an F8_E4M3 `.weight`), not from
  // `modules_to_not_convert` / `ignore`.
  int block_rows = 0, block_cols = 0;

  const char* MethodName() const;
  // "GPTQ 4-bit g128", "AWQ 4-bit g128", "FP8 e4m3 (128x128 blocks)", ...
  std::string Describe() const;
};

// The quantization config.json's `quantization_config` names, nullopt when
// it names none (or an MLX one: mlx_quant.h). NotSupported for a method or
// a variant the loader cannot read (naming what it reads instead);
// InvalidArgument for malformed fields. `name` prefixes messages.
Result<std::optional<HfQuantization>> ParseHfQuantization(const nlohmann::json& config, const std::string& name);

}  // namespace llmhost
