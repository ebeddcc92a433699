#include "model/arch.h"

#include <algorithm>
#include <cmath>

namespace llmhost {

namespace {

struct ArchTraits {
  const char* model_type;
  bool norm_add_one;
  bool qk_norm;
  bool force_qkv_bias;  // qwen2: q/k/v biases whatever the config says
  bool fused;           // phi3: fused qkv and gate_up
  bool gemma;           // sandwich norms, embedding scale, query_pre_attn_scalar
  bool moe;
};

constexpr ArchTraits kArchs[] = {
    // type           +1     qknorm qkvbias fused  gemma  moe
    {"llama",         false, false, false,  false, false, false},
    {"mistral",       false, false, false,  false, false, false},
    {"qwen2",         false, false, true,   false, false, false},
    {"qwen3",         false, true,  false,  false, false, false},
    {"qwen3_moe",     false, true,  false,  false, false, true},
    {"phi3",          false, false, false,  true,  false, false},
    {"gemma3_text",   true,  true,  false,  false, true,  false},
    {"gemma3",        true,  true,  false,  false, true,  false},
};

const ArchTraits* FindArch(const std::string& type) {
  for (const ArchTraits& a : kArchs) {
    if (type == a.model_type) return &a;
  }
  return nullptr;
}

Result<Activation> ParseActivation(const std::string& name) {
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast" ||
      name == "gelu_tanh") {
    return Activation::kGeluTanh;
  }
  return Status::NotSupported("activation '" + name + "' is not supported (silu, gelu_pytorch_tanh)");
}

bool SameRope(const RopeConfig& a, const RopeConfig& b) {
  return a.type == b.type && a.theta == b.theta && a.factor == b.factor &&
         a.partial_rotary_factor == b.partial_rotary_factor &&
         a.low_freq_factor == b.low_freq_factor && a.high_freq_factor == b.high_freq_factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings &&
         a.beta_fast == b.beta_fast && a.beta_slow == b.beta_slow &&
         a.attention_factor == b.attention_factor && a.mscale == b.mscale &&
         a.mscale_all_dim == b.mscale_all_dim && a.truncate == b.truncate &&
         a.short_factor == b.short_factor && a.long_factor == b.long_factor;
}

}  // namespace

const std::vector<std::string>& SupportedArchitectures() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> v;
    for (const ArchTraits& a : kArchs) v.push_back(a.model_type);
    return v;
  }();
  return kNames;
}

Result<ModelSpec> BuildModelSpec(const ModelConfig& c) {
  const ArchTraits* a = FindArch(c.model_type);
  if (!a) {
    std::string list;
    for (const std::string& n : SupportedArchitectures()) list += (list.empty() ? "" : ", ") + n;
    return Status::NotSupported("unsupported architecture '" + c.model_type +
                                "' (config model_type); supported: " + list);
  }
  if (!c.quant_status.ok()) return c.quant_status;
  if (!c.quant_method.empty() && !c.hf_quantization) {
    return Status::NotSupported("quantization method '" + c.quant_method + "' is not supported");
  }
  ModelSpec s;
  s.arch = c.model_type;
  s.hidden = c.hidden_size;
  s.intermediate = c.intermediate_size;
  s.n_layers = c.num_hidden_layers;
  s.n_heads = c.num_attention_heads;
  s.n_kv_heads = c.num_key_value_heads > 0 ? c.num_key_value_heads : c.num_attention_heads;
  s.head_dim = c.head_dim > 0 ? c.head_dim : c.hidden_size / std::max<int64_t>(1, c.num_attention_heads);
  s.vocab = c.vocab_size;
  s.max_position_embeddings = c.max_position_embeddings;
  s.rms_eps = static_cast<float>(c.rms_norm_eps);
  if (s.hidden <= 0 || s.n_layers <= 0 || s.n_heads <= 0 || s.head_dim <= 0 || s.vocab <= 0) {
    return Status::InvalidArgument("config: hidden_size, num_hidden_layers, num_attention_heads, "
                                   "head_dim and vocab_size must be positive");
  }
  if (s.n_heads % s.n_kv_heads != 0) {
    return Status::InvalidArgument("config: num_attention_heads (" + std::to_string(s.n_heads) +
                                   ") is not a multiple of num_key_value_heads (" +
                                   std::to_string(s.n_kv_heads) + ")");
  }
  s.norm_add_one = a->norm_add_one;
  s.qk_norm = a->qk_norm;
  s.qkv_bias = a->force_qkv_bias || c.attention_bias;
  s.o_bias = !a->force_qkv_bias && c.attention_bias;
  s.mlp_bias = c.mlp_bias;
  s.fused_qkv = s.fused_gate_up = a->fused;
  s.sandwich_norms = a->gemma;
  s.scale_embeddings = a->gemma;
  ASSIGN_OR_RETURN(s.activation, ParseActivation(c.hidden_act));
  const double scalar = a->gemma && c.query_pre_attn_scalar ? *c.query_pre_attn_scalar
                                                            : static_cast<double>(s.head_dim);
  if (!(scalar > 0)) return Status::InvalidArgument("config: query_pre_attn_scalar must be positive");
  s.attn_scale = static_cast<float>(1.0 / std::sqrt(scalar));
  s.attn_softcap = static_cast<float>(c.attn_logit_softcapping.value_or(0.0));
  s.final_softcap = static_cast<float>(c.final_logit_softcapping.value_or(0.0));
  s.tie_embeddings = c.tie_word_embeddings;

  if (a->moe) {
    s.n_experts = c.num_experts;
    s.experts_per_token = c.num_experts_per_tok;
    s.moe_intermediate = c.moe_intermediate_size;
    s.norm_topk_prob = c.norm_topk_prob;
    if (s.n_experts <= 0 || s.experts_per_token <= 0 || s.experts_per_token > s.n_experts ||
        s.moe_intermediate <= 0) {
      return Status::InvalidArgument("config: a MoE model needs num_experts (or num_local_experts), "
                                     "num_experts_per_tok <= num_experts and moe_intermediate_size");
    }
  }

  for (int64_t i = 0; i < s.n_layers; ++i) {
    LayerSpec l;
    l.sliding = c.IsSlidingLayer(i) && c.sliding_window.has_value();
    l.window = l.sliding ? *c.sliding_window : 0;
    l.rope = c.RopeForLayer(i);
    if (a->gemma && l.sliding && c.rope_local_base_freq && c.rope_by_layer_type.empty()) {
      l.rope.theta = *c.rope_local_base_freq;
    }
    auto it = std::find_if(s.ropes.begin(), s.ropes.end(),
                           [&](const RopeConfig& r) { return SameRope(r, l.rope); });
    l.rope_index = static_cast<int>(it - s.ropes.begin());
    if (it == s.ropes.end()) s.ropes.push_back(l.rope);
    if (a->moe) {
      const bool mlp_only = std::find(c.mlp_only_layers.begin(), c.mlp_only_layers.end(), i) !=
                            c.mlp_only_layers.end();
      const int64_t step = std::max<int64_t>(1, c.decoder_sparse_step);
      l.moe = !mlp_only && (i + 1) % step == 0;
    }
    s.layers.push_back(l);
  }
  return s;
}

}  // namespace llmhost
