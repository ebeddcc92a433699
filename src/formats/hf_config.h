// Hugging Face `config.json`: the fields llmhost's model code needs, with
// defaults as transformers applies them, and both RoPE conventions
// (transformers-5 `rope_parameters`, legacy `rope_theta` + `rope_scaling`)
// normalized into RopeConfig. The raw JSON is kept for anything else.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/hf_quant.h"
#include "formats/mlx_quant.h"
#include "util/status.h"

namespace llmhost {

enum class RopeType { kDefault, kLinear, kDynamic, kYarn, kLlama3, kLongRope, kOther };

struct RopeConfig {
  RopeType type = RopeType::kDefault;
  std::string type_name = "default";  // as written ("su" normalizes to longrope)
  double theta = 10000.0;             // base frequency
  double factor = 1.0;                // linear, dynamic, yarn, llama3
  double partial_rotary_factor = 1.0; // fraction of head_dim that rotates
  // llama3: wavelength thresholds; yarn/longrope/llama3/dynamic: the
  // pre-training context (falls back to the top-level field of that name).
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::optional<int64_t> original_max_position_embeddings;
  // yarn (defaults as transformers): ramp bounds, attention scaling.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  std::optional<double> attention_factor;  // yarn, longrope
  std::optional<double> mscale;            // yarn (DeepSeek style)
  std::optional<double> mscale_all_dim;
  bool truncate = true;                    // yarn: round the correction range
  // longrope: per-frequency rescale factors, head_dim * partial / 2 each.
  std::vector<double> short_factor;
  std::vector<double> long_factor;
};

struct ModelConfig {
  std::string model_type;                  // "llama", "qwen3_moe", "gemma3_text", "bert"
  std::vector<std::string> architectures;  // ["LlamaForCausalLM"]
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // default: num_attention_heads
  int64_t head_dim = 0;             // default: hidden_size / num_attention_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double layer_norm_eps = 1e-12;    // encoders (bert, xlm-roberta)
  bool tie_word_embeddings = true;  // default per model type, as transformers
  bool attention_bias = false;      // as configured (qwen2 hard-codes q/k/v biases)
  bool mlp_bias = false;
  std::string hidden_act = "silu";  // hidden_activation (gemma) or hidden_act
  std::string dtype;                // "bfloat16" (dtype or torch_dtype); "" if unset

  // Attention pattern: one entry per layer, "full_attention" or
  // "sliding_attention" (or what the config names). From `layer_types` when
  // present, else derived (see hf_config.cpp).
  std::optional<int64_t> sliding_window;
  std::vector<std::string> layer_types;
  std::optional<int64_t> sliding_window_pattern;  // gemma: every Nth layer is global

  // RoPE for full-attention layers, and per layer type where they differ
  // (gemma3: "sliding_attention" has its own base).
  RopeConfig rope;
  std::map<std::string, RopeConfig> rope_by_layer_type;
  double partial_rotary_factor = 1.0;  // same as rope.partial_rotary_factor

  // Mixture of experts (0 / empty when dense).
  int64_t num_experts = 0;  // num_experts or num_local_experts
  int64_t num_experts_per_tok = 0;
  bool norm_topk_prob = false;
  int64_t moe_intermediate_size = 0;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;

  // Gemma.
  std::optional<double> query_pre_attn_scalar;
  std::optional<double> final_logit_softcapping;
  std::optional<double> attn_logit_softcapping;
  std::optional<double> rope_local_base_freq;

  // Special tokens (each may be an int or a list in the file).
  std::vector<int64_t> bos_token_ids;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id;

  // Encoders.
  int64_t type_vocab_size = 0;
  int64_t num_labels = 0;  // entries of id2label (0 when absent)
  std::string position_embedding_type;

  // Quantization: MLX metadata, or the quant_method of another scheme.
  std::optional<MlxQuantization> mlx_quantization;
  std::string quant_method;  // "gptq", "awq", "fp8", ... ("" if none or MLX)
  // GPTQ / AWQ / FP8 (hf_quant.h); when quant_method names a scheme the
  // loader cannot read, why (loading fails with it; the config still parses,
  // so the model is listed).
  std::optional<HfQuantization> hf_quantization;
  Status quant_status;

  nlohmann::json raw;  // the whole file

  // The RoPE settings of layer `layer` (its layer type's, else `rope`).
  const RopeConfig& RopeForLayer(int64_t layer) const;
  bool IsSlidingLayer(int64_t layer) const;
  bool IsMoe() const { return num_experts > 0; }
};

// Parses config.json text; `name` (e.g. the path) prefixes error messages.
// InvalidArgument for malformed JSON, a field of the wrong type, a missing
// required field (hidden_size, num_hidden_layers, num_attention_heads,
// vocab_size) or inconsistent values.
Result<ModelConfig> ParseModelConfig(std::string_view json_text, const std::string& name);
Result<ModelConfig> ParseModelConfigJson(const nlohmann::json& j, const std::string& name);
// Reads `path`, or `path`/config.json when `path` is a directory.
Result<ModelConfig> LoadModelConfig(const std::string& path);

// Normalizes one rope dictionary (either convention's inner dict).
Result<RopeConfig> ParseRopeDict(const nlohmann::json& dict, const RopeConfig& base,
                                 const std::string& where);
const char* RopeTypeName(RopeType t);

}  // namespace llmhost
