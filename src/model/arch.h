// Architectures as data: one generic decoder (model/forward.cpp) driven by a
// ModelSpec that says how each supported family differs (norm style, q/k
// norms, biases, fused projections, sliding windows, activation, embedding
// scale, soft-caps, RoPE per layer type, mixture of experts).
//
// Supported model_type values: llama, mistral, qwen2, qwen3, qwen3_moe, phi3,
// gemma3_text (and gemma3 configs flattened to their text model).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "formats/hf_config.h"
#include "util/status.h"

namespace llmhost {

struct LayerSpec {
  bool sliding = false;
  int64_t window = 0;     // > 0 on sliding layers: keys visible to a query, itself included
  RopeConfig rope;        // this layer's RoPE settings
  int rope_index = 0;     // index into ModelSpec::ropes (layers sharing settings share it)
  bool moe = false;       // sparse MLP on this layer
};

struct ModelSpec {
  std::string arch;       // model_type ("llama", "gemma3_text", ...)
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab = 0;      // rows of the embedding and of the output head
  int64_t max_position_embeddings = 0;
  float rms_eps = 1e-6f;

  // Family traits.
  bool norm_add_one = false;     // Gemma: x̂ · (1 + w)
  bool qk_norm = false;          // per-head RMSNorm of q and k before RoPE (Qwen3, Gemma3)
  bool qkv_bias = false;         // biases on q/k/v projections
  bool o_bias = false;           // bias on the output projection
  bool mlp_bias = false;         // biases on gate/up/down
  bool fused_qkv = false;        // Phi-3: one qkv_proj [(H + 2 KV) · hd, hidden]
  bool fused_gate_up = false;    // Phi-3: one gate_up_proj [2 I, hidden], gate first
  bool sandwich_norms = false;   // Gemma3: norm after attention / MLP outputs, pre-FFN norm
  bool scale_embeddings = false; // Gemma: embeddings × sqrt(hidden) (rounded to the table's dtype)
  Activation activation = Activation::kSilu;
  float attn_scale = 1;          // multiplies q·k
  float attn_softcap = 0;        // 0: none
  float final_softcap = 0;       // 0: none
  bool tie_embeddings = false;
  RopePairing rope_pairing = RopePairing::kHalfSplit;  // GGUF llama: interleaved
  std::vector<float> rope_freq_factors;  // GGUF rope_freqs: inv_freq[i] /= factor[i] (empty: none)

  // Mixture of experts (0 when dense).
  int64_t n_experts = 0;
  int64_t experts_per_token = 0;
  int64_t moe_intermediate = 0;
  bool norm_topk_prob = false;

  std::vector<LayerSpec> layers;
  std::vector<RopeConfig> ropes;  // distinct RoPE settings, by LayerSpec::rope_index

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// The supported model_type values, for error messages and docs.
const std::vector<std::string>& SupportedArchitectures();

// Builds the spec of `config`. NotSupported naming the model_type for an
// unknown architecture or an unsupported activation; InvalidArgument for
// inconsistent dimensions (heads not divisible, ...).
Result<ModelSpec> BuildModelSpec(const ModelConfig& config);

}  // namespace llmhost
