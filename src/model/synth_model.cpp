// synth-model: completes the given config.json, checks it with the loader's
// own parser, then writes the tokenizer files and streams the weights.
#include "model/synth_model.h"

#include <sys/statvfs.h>

#include <filesystem>

#include "formats/hf_config.h"
#include "model/arch.h"
#include "model/synth_internal.h"
#include "util/file.h"

namespace llmhost {

namespace {

using OJson = nlohmann::ordered_json;

struct ArchDefaults {
  const char* type;
  const char* hf_class;
  double rms_norm_eps;
  double rope_theta;
  bool tie_word_embeddings;
};

// transformers' defaults for each family (Llama: the Llama-3 RoPE base).
constexpr ArchDefaults kArchs[] = {
    {"llama", "LlamaForCausalLM", 1e-5, 500000.0, false},
    {"mistral", "MistralForCausalLM", 1e-5, 1000000.0, false},
    {"qwen2", "Qwen2ForCausalLM", 1e-6, 1000000.0, false},
    {"qwen3", "Qwen3ForCausalLM", 1e-6, 1000000.0, false},
    {"qwen3_moe", "Qwen3MoeForCausalLM", 1e-6, 1000000.0, false},
    {"phi3", "Phi3ForCausalLM", 1e-5, 10000.0, false},
    {"gemma3_text", "Gemma3ForCausalLM", 1e-6, 1000000.0, true},
};

constexpr int64_t kMaxVocab = int64_t{1} << 20;
constexpr int64_t kMaxDim = int64_t{1} << 18;       // hidden, intermediate, head dims
constexpr int64_t kMaxCount = 4096;                 // layers, heads, experts
constexpr uint64_t kMaxWeightBytes = uint64_t{1} << 42;  // 4 TiB

const ArchDefaults* FindArch(const std::string& arch) {
  for (const ArchDefaults& a : kArchs) {
    if (arch == a.type) return &a;
  }
  return nullptr;
}

void Default(OJson& c, const char* key, OJson value) {
  if (!c.contains(key)) c[key] = std::move(value);
}

std::string ArchList() {
  std::string s;
  for (const ArchDefaults& a : kArchs) s += std::string(s.empty() ? "" : ", ") + a.type;
  return s;
}

// Integer value of `key` (0 when absent or not an integer: the parser reports those).
int64_t IntOf(const OJson& c, const char* key) {
  auto it = c.find(key);
  return it != c.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// Bounds on the raw values, checked before the spec (which allocates per
// layer) is built.
Status CheckLimits(const OJson& c) {
  const std::pair<const char*, int64_t> limits[] = {
      {"vocab_size", kMaxVocab},          {"hidden_size", kMaxDim},
      {"intermediate_size", kMaxDim},     {"moe_intermediate_size", kMaxDim},
      {"head_dim", kMaxDim},              {"num_hidden_layers", kMaxCount},
      {"num_attention_heads", kMaxCount}, {"num_key_value_heads", kMaxCount},
      {"num_experts", kMaxCount},         {"num_local_experts", kMaxCount},
      {"max_position_embeddings", int64_t{1} << 24}};
  for (const auto& [key, max] : limits) {
    const int64_t v = IntOf(c, key);
    if (v > max) {
      return Status::InvalidArgument("--config: " + std::string(key) + " " + std::to_string(v) +
                                     " exceeds synth-model's limit " + std::to_string(max));
    }
  }
  return Status::OK();
}

Status CheckSpec(const ModelSpec& s) {
  if (s.vocab < synth::kMinVocab) {
    return Status::InvalidArgument("--config: vocab_size " + std::to_string(s.vocab) +
                                   " is too small: the byte-level tokenizer needs at least " +
                                   std::to_string(synth::kMinVocab) +
                                   " ids (256 bytes + 3 special tokens)");
  }
  bool dense = false;
  for (const LayerSpec& l : s.layers) dense |= !l.moe;
  if (dense && s.intermediate <= 0) {
    return Status::InvalidArgument("--config: 'intermediate_size' is missing or not positive");
  }
  if (s.q_dim() > kMaxDim) {
    return Status::InvalidArgument("--config: num_attention_heads x head_dim exceeds " +
                                   std::to_string(kMaxDim));
  }
  return Status::OK();
}

// Every quantized matrix's input width must be a multiple of the group size
// (`fix` says what to try when it is not).
Status CheckGroups(const ModelSpec& s, int group, const char* fix = "try --group-size 32") {
  std::vector<std::pair<const char*, int64_t>> widths = {{"hidden_size", s.hidden},
                                                         {"num_attention_heads x head_dim", s.q_dim()}};
  bool dense = false, moe = false;
  for (const LayerSpec& l : s.layers) (l.moe ? moe : dense) = true;
  if (dense) widths.push_back({"intermediate_size", s.intermediate});
  if (moe) widths.push_back({"moe_intermediate_size", s.moe_intermediate});
  for (const auto& [name, w] : widths) {
    if (w % group != 0) {
      return Status::InvalidArgument("--config: " + std::string(name) + " " + std::to_string(w) +
                                     " is not a multiple of the group size " +
                                     std::to_string(group) + " (" + fix + ")");
    }
  }
  return Status::OK();
}

Result<ModelSpec> SpecOf(const OJson& config) {
  ASSIGN_OR_RETURN(ModelConfig mc,
                   ParseModelConfigJson(nlohmann::json::parse(config.dump()), "--config"));
  auto spec = BuildModelSpec(mc);
  if (!spec.ok()) return spec.status().WithContext("--config");
  return spec;
}

Status WriteJson(const std::string& path, const OJson& j) {
  return WriteFileAtomic(path, j.dump(2) + "\n");
}

}  // namespace

Result<SynthDType> ParseSynthDType(std::string_view name) {
  if (name == "bf16") return SynthDType::kBF16;
  if (name == "mlx4") return SynthDType::kMlx4;
  if (name == "mlx8") return SynthDType::kMlx8;
  if (name == "fp8") return SynthDType::kFp8;
  if (name == "gptq4") return SynthDType::kGptq4;
  if (name == "awq4") return SynthDType::kAwq4;
  if (name == "w4a16") return SynthDType::kW4A16;
  return Status::InvalidArgument("--dtype: '" + std::string(name) +
                                 "' (expected bf16, mlx4, mlx8, fp8, gptq4, awq4 or w4a16)");
}

const std::vector<std::string>& SynthArchitectures() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> v;
    for (const ArchDefaults& a : kArchs) v.push_back(a.type);
    return v;
  }();
  return kNames;
}

Result<OJson> SynthConfig(const SynthOptions& o) {
  const ArchDefaults* a = FindArch(o.arch);
  if (!a) {
    return Status::NotSupported("--arch: unknown architecture '" + o.arch + "' (supported: " +
                                ArchList() + ")");
  }
  if (!o.config.is_object()) return Status::InvalidArgument("--config: expected a JSON object");
  const bool mlx = IsMlx(o.dtype);
  const bool grouped = mlx || o.dtype == SynthDType::kGptq4 || o.dtype == SynthDType::kAwq4 || o.dtype == SynthDType::kW4A16;
  if (grouped && o.group_size != 32 && o.group_size != 64 && o.group_size != 128) {
    return Status::InvalidArgument("--group-size: " + std::to_string(o.group_size) + " (32, 64 or 128)");
  }
  OJson c = o.config;
  if (auto it = c.find("model_type"); it != c.end() && *it != o.arch) {
    return Status::InvalidArgument("--config: model_type " + it->dump() + " differs from --arch '" +
                                   o.arch + "'");
  }
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"}) {
    if (!c.contains(key)) {
      return Status::InvalidArgument("--config: '" + std::string(key) + "' is missing (required)");
    }
  }
  const std::string arch = o.arch;
  const bool gemma = arch == "gemma3_text";
  Default(c, "architectures", OJson::array({a->hf_class}));
  Default(c, "model_type", arch);
  Default(c, "num_key_value_heads", c["num_attention_heads"]);
  const int64_t hidden = IntOf(c, "hidden_size"), heads = IntOf(c, "num_attention_heads");
  // transformers' Qwen3 / Gemma3 configs default head_dim to 128 / 256, not
  // hidden / heads: write it so that every reader agrees.
  if (arch != "phi3" && heads > 0 && hidden % heads == 0) Default(c, "head_dim", hidden / heads);
  Default(c, "max_position_embeddings", 4096);
  Default(c, "rms_norm_eps", a->rms_norm_eps);
  if (!c.contains("rope_theta") && !c.contains("rope_parameters") && !c.contains("rope_scaling")) {
    c["rope_theta"] = a->rope_theta;
  }
  if (!c.contains("hidden_act") && !c.contains("hidden_activation")) {
    c[gemma ? "hidden_activation" : "hidden_act"] = gemma ? "gelu_pytorch_tanh" : "silu";
  }
  Default(c, "tie_word_embeddings", a->tie_word_embeddings);
  Default(c, "torch_dtype", "bfloat16");
  Default(c, "initializer_range", 0.02);  // synth::kWeightStd, as a decimal
  const int64_t vocab = IntOf(c, "vocab_size");
  const synth::SpecialIds sp = synth::SpecialsFor(vocab);
  if (vocab >= synth::kMinVocab) {
    Default(c, "bos_token_id", sp.endoftext);
    Default(c, "eos_token_id", sp.im_end);
  }
  if (arch == "mistral") Default(c, "sliding_window", nullptr);  // transformers' default is 4096
  if (arch.rfind("qwen", 0) == 0) Default(c, "use_sliding_window", false);
  if (arch == "qwen3_moe") {
    Default(c, "norm_topk_prob", true);
    Default(c, "decoder_sparse_step", 1);
    Default(c, "mlp_only_layers", OJson::array());
  }
  if (arch == "phi3") Default(c, "original_max_position_embeddings", c["max_position_embeddings"]);
  if (gemma) {
    if (c.contains("head_dim")) Default(c, "query_pre_attn_scalar", c["head_dim"]);
    Default(c, "sliding_window", 512);
    if (!c.contains("layer_types")) Default(c, "sliding_window_pattern", 6);
    Default(c, "rope_local_base_freq", 10000.0);
    Default(c, "final_logit_softcapping", nullptr);
    Default(c, "attn_logit_softcapping", nullptr);
  }
  if (mlx) {
    const OJson q = {{"group_size", o.group_size}, {"bits", o.dtype == SynthDType::kMlx4 ? 4 : 8}};
    c["quantization"] = q;
    c["quantization_config"] = q;
  } else if (o.dtype == SynthDType::kFp8) {
    c["quantization_config"] = {{"quant_method", "fp8"},
                                {"activation_scheme", "dynamic"},
                                {"fmt", "e4m3"},
                                {"weight_block_size", {synth::kFp8Block, synth::kFp8Block}}};
  } else if (o.dtype == SynthDType::kGptq4) {
    c["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4},        {"group_size", o.group_size},
                                {"desc_act", false},      {"sym", true},      {"checkpoint_format", "gptq"}};
  } else if (o.dtype == SynthDType::kW4A16) {
    const OJson weights = {{"num_bits", 4},  {"type", "int"},           {"symmetric", false},
                           {"strategy", "group"}, {"group_size", o.group_size}};
    c["quantization_config"] = {{"quant_method", "compressed-tensors"},
                                {"format", "pack-quantized"},
                                {"config_groups", {{"group_0", {{"targets", {"Linear"}}, {"weights", weights}}}}},
                                {"ignore", {"lm_head"}}};
  } else if (o.dtype == SynthDType::kAwq4) {
    c["quantization_config"] = {
        {"quant_method", "awq"}, {"bits", 4}, {"group_size", o.group_size}, {"version", "gemm"}, {"zero_point", true}};
  }
  RETURN_IF_ERROR(CheckLimits(c));
  ASSIGN_OR_RETURN(ModelSpec spec, SpecOf(c));
  RETURN_IF_ERROR(CheckSpec(spec));
  if (grouped) RETURN_IF_ERROR(CheckGroups(spec, o.group_size));
  if (o.dtype == SynthDType::kFp8) RETURN_IF_ERROR(CheckGroups(spec, synth::kFp8Block, "FP8's 128x128 scale blocks"));
  return c;
}

namespace synth {

Result<ModelPlan> PlanModel(const SynthOptions& o) {
  ModelPlan plan;
  ASSIGN_OR_RETURN(plan.config, SynthConfig(o));
  ASSIGN_OR_RETURN(plan.spec, SpecOf(plan.config));
  plan.tensors = PlanTensors(plan.spec, o.dtype, o.group_size);
  for (const Tensor& t : plan.tensors) plan.weight_bytes += TensorBytes(t);
  if (plan.weight_bytes > kMaxWeightBytes) {
    return Status::InvalidArgument("--config: the weights would take " +
                                   std::to_string(plan.weight_bytes >> 30) + " GiB (limit " +
                                   std::to_string(kMaxWeightBytes >> 30) + " GiB)");
  }
  return plan;
}

}  // namespace synth

Result<SynthSummary> SynthesizeModel(const SynthOptions& o) {
  ASSIGN_OR_RETURN(synth::ModelPlan plan, synth::PlanModel(o));
  const OJson& config = plan.config;
  const ModelSpec& spec = plan.spec;
  const std::vector<synth::Tensor>& tensors = plan.tensors;
  SynthSummary summary;
  summary.tensors = static_cast<int64_t>(tensors.size());
  summary.weight_bytes = plan.weight_bytes;
  if (o.out_dir.empty()) return Status::InvalidArgument("--out: no directory given");
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec || !IsDirectory(o.out_dir)) {
    return Status::IOError(o.out_dir + ": cannot create the directory" +
                           (ec ? ": " + ec.message() : std::string()));
  }
  struct statvfs fs;
  if (::statvfs(o.out_dir.c_str(), &fs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    const uint64_t need = summary.weight_bytes + (uint64_t{64} << 20);  // + tokenizer, slack
    if (free_bytes < need) {
      return Status::ResourceExhausted(o.out_dir + ": needs " + std::to_string(need >> 20) +
                                       " MiB, only " + std::to_string(free_bytes >> 20) +
                                       " MiB free");
    }
  }
  const int64_t vocab = spec.vocab;
  RETURN_IF_ERROR(WriteJson(JoinPath(o.out_dir, "config.json"), config));
  RETURN_IF_ERROR(WriteFileAtomic(JoinPath(o.out_dir, "tokenizer.json"), synth::TokenizerJson(vocab)));
  RETURN_IF_ERROR(WriteJson(JoinPath(o.out_dir, "tokenizer_config.json"),
                            synth::TokenizerConfig(vocab, spec.max_position_embeddings)));
  RETURN_IF_ERROR(WriteJson(JoinPath(o.out_dir, "generation_config.json"), synth::GenerationConfigJson(vocab)));
  RETURN_IF_ERROR(synth::WriteWeights(JoinPath(o.out_dir, "model.safetensors"), tensors, o.seed, o.pool));
  return summary;
}

}  // namespace llmhost
