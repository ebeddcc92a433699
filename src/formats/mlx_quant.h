// MLX (mlx-lm) quantization metadata from config.json: `quantization` (or
// `quantization_config` without a `quant_method`) holds the defaults `bits`
// and `group_size` (and `mode`, "affine" unless given), plus per-module
// overrides: a key that is a module path ("model.embed_tokens",
// "model.layers.0.mlp.gate") mapping to {"bits": .., "group_size": ..}, or to
// false (module left unquantized).
//
// As in mlx-lm, a module without an override is quantized with the defaults
// only when its `<module>.scales` tensor exists; callers check that.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

struct MlxQuantParams {
  int bits = 4;         // 2..8
  int group_size = 64;  // elements sharing one scale and bias
  std::string mode = "affine";
  bool operator==(const MlxQuantParams&) const = default;
};

struct MlxQuantization {
  MlxQuantParams defaults;
  // Module path -> its params, or nullopt when explicitly not quantized.
  std::map<std::string, std::optional<MlxQuantParams>, std::less<>> overrides;

  // Params for `module` ("model.layers.0.self_attn.q_proj"; a trailing
  // ".weight" is ignored): the override if any, else the defaults. nullopt
  // means "not quantized".
  std::optional<MlxQuantParams> ForModule(std::string_view module) const;
};

// Reads MLX quantization from a parsed config.json object. nullopt when the
// config has none (or has a non-MLX `quantization_config`, e.g. GPTQ/AWQ,
// which carries a `quant_method`). InvalidArgument naming `name` on bad values.
Result<std::optional<MlxQuantization>> ParseMlxQuantization(const nlohmann::json& config,
                                                            const std::string& name);

}  // namespace llmhost
