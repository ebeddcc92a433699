#include "formats/hf_config.h"

#include <algorithm>

#include "formats/hf_config_fields.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost {

// hf_rope.cpp
Status ParseRopeSettings(const nlohmann::json& src, const std::string& name, ModelConfig* c);

namespace {

using Json = nlohmann::json;

// Model types whose transformers config defaults tie_word_embeddings to false
// (PretrainedConfig's default is true).
bool UntiedByDefault(const std::string& t) {
  static const char* const kUntied[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe",
                                        "qwen3", "qwen3_moe", "phi3", "phimoe"};
  return std::any_of(std::begin(kUntied), std::end(kUntied), [&](const char* u) { return t == u; });
}

bool IsQwenFamily(const std::string& t) {
  return t == "qwen2" || t == "qwen2_moe" || t == "qwen3" || t == "qwen3_moe";
}

// Multimodal configs keep the language model under text_config: flatten it,
// letting its fields win, so the text model reads like a plain LLM config.
Json Flatten(const Json& root) {
  auto tc = root.find("text_config");
  if (root.contains("hidden_size") || tc == root.end() || !tc->is_object()) return root;
  Json merged = *tc;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "text_config" || it.key() == "vision_config") continue;
    if (!merged.contains(it.key())) merged[it.key()] = *it;
  }
  return merged;
}

Status DeriveLayerTypes(const JsonFields& f, ModelConfig* c) {
  const int64_t n = c->num_hidden_layers;
  if (const Json* lt = f.Get("layer_types")) {
    if (!lt->is_array()) return f.Error("layer_types", "a list of strings", *lt);
    for (const Json& e : *lt) {
      if (!e.is_string()) return f.Error("layer_types", "a list of strings", *lt);
      c->layer_types.push_back(e.get<std::string>());
    }
    if (static_cast<int64_t>(c->layer_types.size()) != n) {
      return Status::InvalidArgument(f.where() + ": layer_types has " +
                                     std::to_string(c->layer_types.size()) +
                                     " entries, num_hidden_layers is " + std::to_string(n));
    }
    return Status::OK();
  }
  c->layer_types.assign(static_cast<size_t>(n), "full_attention");
  if (!c->sliding_window) return Status::OK();
  const bool gemma3 = c->model_type == "gemma3" || c->model_type == "gemma3_text";
  int64_t pattern = c->sliding_window_pattern.value_or(gemma3 ? 6 : 0);
  int64_t max_window_layers = 0;
  RETURN_IF_ERROR(f.Int("max_window_layers", &max_window_layers));
  for (int64_t i = 0; i < n; ++i) {
    bool sliding;
    if (pattern > 0) {
      sliding = (i + 1) % pattern != 0;  // every pattern-th layer is global
    } else if (c->model_type == "gemma2") {
      sliding = i % 2 == 0;
    } else if (IsQwenFamily(c->model_type)) {
      sliding = i >= max_window_layers;
    } else {
      sliding = true;  // mistral, phi3: the window applies to every layer
    }
    if (sliding) c->layer_types[static_cast<size_t>(i)] = "sliding_attention";
  }
  return Status::OK();
}

Status RequirePositive(const JsonFields& f, const char* key, int64_t v) {
  if (v > 0) return Status::OK();
  return Status::InvalidArgument(f.where() + ": '" + key + "' " +
                                 (f.Has(key) ? "must be positive" : "is missing"));
}

}  // namespace

Result<ModelConfig> ParseModelConfigJson(const Json& root, const std::string& name) {
  if (!root.is_object()) return Status::InvalidArgument(name + ": not a JSON object");
  const Json src = Flatten(root);
  JsonFields f(src, name);
  ModelConfig c;
  c.raw = root;
  RETURN_IF_ERROR(f.String("model_type", &c.model_type));
  if (const Json* a = f.Get("architectures")) {
    if (!a->is_array()) return f.Error("architectures", "a list of strings", *a);
    for (const Json& e : *a) {
      if (!e.is_string()) return f.Error("architectures", "a list of strings", *a);
      c.architectures.push_back(e.get<std::string>());
    }
  }

  RETURN_IF_ERROR(f.Int("hidden_size", &c.hidden_size));
  RETURN_IF_ERROR(f.Int("intermediate_size", &c.intermediate_size));
  RETURN_IF_ERROR(f.Int("num_hidden_layers", &c.num_hidden_layers));
  RETURN_IF_ERROR(f.Int("num_attention_heads", &c.num_attention_heads));
  RETURN_IF_ERROR(f.Int("vocab_size", &c.vocab_size));
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"}) {
    int64_t v = 0;
    RETURN_IF_ERROR(f.Int(key, &v));
    RETURN_IF_ERROR(RequirePositive(f, key, v));
  }
  c.num_key_value_heads = c.num_attention_heads;
  RETURN_IF_ERROR(f.Int("num_key_value_heads", &c.num_key_value_heads));
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0) {
    return Status::InvalidArgument(name + ": num_key_value_heads " +
                                   std::to_string(c.num_key_value_heads) + " does not divide " +
                                   "num_attention_heads " + std::to_string(c.num_attention_heads));
  }
  if (f.Has("head_dim")) {
    RETURN_IF_ERROR(f.Int("head_dim", &c.head_dim));
    RETURN_IF_ERROR(RequirePositive(f, "head_dim", c.head_dim));
  } else if (c.hidden_size % c.num_attention_heads != 0) {
    return Status::InvalidArgument(name + ": no head_dim, and hidden_size " +
                                   std::to_string(c.hidden_size) + " is not a multiple of " +
                                   "num_attention_heads " + std::to_string(c.num_attention_heads));
  } else {
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  RETURN_IF_ERROR(f.Int("max_position_embeddings", &c.max_position_embeddings));
  RETURN_IF_ERROR(f.Double("rms_norm_eps", &c.rms_norm_eps));
  RETURN_IF_ERROR(f.Double("layer_norm_eps", &c.layer_norm_eps));
  c.tie_word_embeddings = !UntiedByDefault(c.model_type);
  RETURN_IF_ERROR(f.Bool("tie_word_embeddings", &c.tie_word_embeddings));
  RETURN_IF_ERROR(f.Bool("attention_bias", &c.attention_bias));
  RETURN_IF_ERROR(f.Bool("mlp_bias", &c.mlp_bias));
  RETURN_IF_ERROR(f.String("hidden_act", &c.hidden_act));
  RETURN_IF_ERROR(f.String("hidden_activation", &c.hidden_act));  // gemma's name wins
  RETURN_IF_ERROR(f.String("torch_dtype", &c.dtype));
  RETURN_IF_ERROR(f.String("dtype", &c.dtype));  // transformers 5's name wins

  // Sliding window; qwen's use_sliding_window=false disables it (as transformers).
  RETURN_IF_ERROR(f.OptInt("sliding_window", &c.sliding_window));
  bool use_sliding_window = true;
  RETURN_IF_ERROR(f.Bool("use_sliding_window", &use_sliding_window));
  if (!use_sliding_window) c.sliding_window.reset();
  if (c.sliding_window && *c.sliding_window <= 0) c.sliding_window.reset();
  RETURN_IF_ERROR(f.OptInt("_sliding_window_pattern", &c.sliding_window_pattern));
  RETURN_IF_ERROR(f.OptInt("sliding_window_pattern", &c.sliding_window_pattern));
  RETURN_IF_ERROR(DeriveLayerTypes(f, &c));

  // MoE: transformers 5 writes num_local_experts; Qwen repositories num_experts.
  RETURN_IF_ERROR(f.Int("num_local_experts", &c.num_experts));
  RETURN_IF_ERROR(f.Int("num_experts", &c.num_experts));
  RETURN_IF_ERROR(f.Int("num_experts_per_tok", &c.num_experts_per_tok));
  RETURN_IF_ERROR(f.Bool("norm_topk_prob", &c.norm_topk_prob));
  RETURN_IF_ERROR(f.Int("moe_intermediate_size", &c.moe_intermediate_size));
  RETURN_IF_ERROR(f.Int("decoder_sparse_step", &c.decoder_sparse_step));
  RETURN_IF_ERROR(f.IntList("mlp_only_layers", &c.mlp_only_layers));
  if (c.num_experts < 0 || c.num_experts_per_tok < 0 || c.num_experts_per_tok > c.num_experts) {
    return Status::InvalidArgument(name + ": num_experts_per_tok " +
                                   std::to_string(c.num_experts_per_tok) + " exceeds num_experts " +
                                   std::to_string(c.num_experts));
  }

  // Gemma.
  RETURN_IF_ERROR(f.OptDouble("query_pre_attn_scalar", &c.query_pre_attn_scalar));
  RETURN_IF_ERROR(f.OptDouble("final_logit_softcapping", &c.final_logit_softcapping));
  RETURN_IF_ERROR(f.OptDouble("attn_logit_softcapping", &c.attn_logit_softcapping));
  RETURN_IF_ERROR(f.OptDouble("rope_local_base_freq", &c.rope_local_base_freq));

  RETURN_IF_ERROR(ParseRopeSettings(src, name, &c));

  // Special tokens: the text config first, the outer config as fallback.
  RETURN_IF_ERROR(f.IntOrList("bos_token_id", &c.bos_token_ids));
  RETURN_IF_ERROR(f.IntOrList("eos_token_id", &c.eos_token_ids));
  std::vector<int64_t> pad;
  RETURN_IF_ERROR(f.IntOrList("pad_token_id", &pad));
  if (!pad.empty()) c.pad_token_id = pad.front();

  // Encoders.
  RETURN_IF_ERROR(f.Int("type_vocab_size", &c.type_vocab_size));
  RETURN_IF_ERROR(f.String("position_embedding_type", &c.position_embedding_type));
  if (const Json* labels = f.Get("id2label"); labels != nullptr && labels->is_object()) {
    c.num_labels = static_cast<int64_t>(labels->size());
  }
  RETURN_IF_ERROR(f.Int("num_labels", &c.num_labels));

  // Quantization.
  ASSIGN_OR_RETURN(c.mlx_quantization, ParseMlxQuantization(root, name));
  if (!c.mlx_quantization) {
    if (const Json* qc = f.Get("quantization_config"); qc != nullptr && qc->is_object()) {
      RETURN_IF_ERROR(
          JsonFields(*qc, name + ": quantization_config").String("quant_method", &c.quant_method));
    }
    Result<std::optional<HfQuantization>> hq = ParseHfQuantization(root, name);
    if (hq.ok()) {
      c.hf_quantization = *hq;
    } else {
      c.quant_status = hq.status();
    }
  }
  return c;
}

Result<ModelConfig> ParseModelConfig(std::string_view json_text, const std::string& name) {
  ASSIGN_OR_RETURN(Json j, ParseJson(json_text, name, kJsonModelFileMaxBytes));
  return ParseModelConfigJson(j, name);
}

Result<ModelConfig> LoadModelConfig(const std::string& path) {
  std::string file = IsDirectory(path) ? JoinPath(path, "config.json") : path;
  ASSIGN_OR_RETURN(Json j, ReadJsonFile(file, kJsonModelFileMaxBytes));
  return ParseModelConfigJson(j, file);
}

const RopeConfig& ModelConfig::RopeForLayer(int64_t layer) const {
  if (layer >= 0 && layer < static_cast<int64_t>(layer_types.size())) {
    auto it = rope_by_layer_type.find(layer_types[static_cast<size_t>(layer)]);
    if (it != rope_by_layer_type.end()) return it->second;
  }
  return rope;
}

bool ModelConfig::IsSlidingLayer(int64_t layer) const {
  return layer >= 0 && layer < static_cast<int64_t>(layer_types.size()) &&
         layer_types[static_cast<size_t>(layer)] == "sliding_attention";
}

}  // namespace llmhost
