#include "formats/inspect.h"

#include <filesystem>
#include <map>
#include <vector>

#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/safetensors_model.h"
#include "util/file.h"

namespace llmhost {

namespace {

using OJson = nlohmann::ordered_json;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

template <typename T>
void PutOptional(OJson& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

OJson RopeJson(const RopeConfig& r) {
  OJson j;
  j["type"] = r.type_name;
  j["theta"] = r.theta;
  if (r.type != RopeType::kDefault) j["factor"] = r.factor;
  if (r.partial_rotary_factor != 1.0) j["partial_rotary_factor"] = r.partial_rotary_factor;
  if (r.type == RopeType::kLlama3) {
    j["low_freq_factor"] = r.low_freq_factor;
    j["high_freq_factor"] = r.high_freq_factor;
  }
  PutOptional(j, "original_max_position_embeddings", r.original_max_position_embeddings);
  return j;
}

OJson ConfigJson(const ModelConfig& c) {
  OJson j;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["hidden_act"] = c.hidden_act;
  if (!c.dtype.empty()) j["dtype"] = c.dtype;
  PutOptional(j, "sliding_window", c.sliding_window);
  j["layer_types"] = c.layer_types;
  j["rope"] = RopeJson(c.rope);
  if (!c.rope_by_layer_type.empty()) {
    OJson per;
    for (const auto& [type, r] : c.rope_by_layer_type) per[type] = RopeJson(r);
    j["rope_by_layer_type"] = per;
  }
  if (c.IsMoe()) {
    j["num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["norm_topk_prob"] = c.norm_topk_prob;
  }
  j["bos_token_id"] = c.bos_token_ids;
  j["eos_token_id"] = c.eos_token_ids;
  return j;
}

Result<OJson> InspectSafetensors(const std::string& path, const InspectOptions& opts) {
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsModel> m, SafetensorsModel::Open(path));
  OJson j;
  j["path"] = path;
  j["format"] = "safetensors";
  const char* layout = m->layout() == SafetensorsModel::Layout::kSingleFile ? "single_file"
                       : m->layout() == SafetensorsModel::Layout::kIndexed  ? "sharded"
                                                                            : "all_files";
  j["layout"] = layout;
  j["files"] = m->files().size();

  std::string config_path = JoinPath(m->dir(), "config.json");
  if (FileExists(config_path)) {
    ASSIGN_OR_RETURN(ModelConfig c, LoadModelConfig(config_path));
    j["architecture"] = c.architectures.empty() ? "" : c.architectures.front();
    j["model_type"] = c.model_type;
    j["config"] = ConfigJson(c);
    if (c.mlx_quantization) {
      j["quantization"] = {{"format", "mlx"},
                           {"bits", c.mlx_quantization->defaults.bits},
                           {"group_size", c.mlx_quantization->defaults.group_size},
                           {"mode", c.mlx_quantization->defaults.mode},
                           {"overrides", c.mlx_quantization->overrides.size()}};
    } else if (c.hf_quantization) {
      const HfQuantization& q = *c.hf_quantization;
      j["quantization"] = {{"format", c.quant_method}, {"method", q.MethodName()}, {"description", q.Describe()}};
      if (q.method != HfQuantization::Method::kFp8) {
        j["quantization"]["bits"] = q.bits;
        j["quantization"]["group_size"] = q.group_size > 0 ? q.group_size : -1;
      } else if (q.block_rows > 0) {
        j["quantization"]["block"] = {q.block_rows, q.block_cols};
      }
    } else if (!c.quant_method.empty()) {
      j["quantization"] = {{"format", c.quant_method}, {"supported", false}, {"error", c.quant_status.message()}};
    }
  }

  std::map<std::string, size_t> dtypes;
  for (const auto& [name, e] : m->entries()) ++dtypes[DTypeName(e.info->dtype)];
  j["tensor_count"] = m->tensor_count();
  j["total_weight_bytes"] = m->total_tensor_bytes();
  j["dtypes"] = dtypes;
  OJson tensors = OJson::array();
  for (const auto& [name, e] : m->entries()) {
    if (!opts.all_tensors && tensors.size() >= opts.max_tensors) break;
    OJson t;
    t["name"] = name;
    t["dtype"] = DTypeName(e.info->dtype);
    t["shape"] = e.info->shape;
    if (m->files().size() > 1) t["file"] = BaseName(e.file->path());
    tensors.push_back(std::move(t));
  }
  j["tensors_listed"] = tensors.size();
  j["tensors"] = std::move(tensors);
  return j;
}

// Scalars as JSON values, arrays as an abbreviated description.
OJson GgufValueJson(const GgufFile& g, const std::string& key) {
  std::optional<GgufValueType> t = g.TypeOf(key);
  switch (t.value_or(GgufValueType::kArray)) {
    case GgufValueType::kString: return *g.GetString(key);
    case GgufValueType::kBool: return *g.GetBool(key);
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64: return *g.GetFloat(key);
    case GgufValueType::kArray: return g.DescribeValue(key);
    default: {
      Result<int64_t> i = g.GetInt(key);
      if (i.ok()) return *i;
      return g.DescribeValue(key);  // a uint64 above INT64_MAX
    }
  }
}

Result<OJson> InspectGguf(const std::string& path, const InspectOptions& opts) {
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> g, GgufFile::Open(path));
  OJson j;
  j["path"] = path;
  j["format"] = "gguf";
  j["version"] = g->version();
  j["alignment"] = g->alignment();
  std::string arch = g->GetString("general.architecture").ok()
                         ? *g->GetString("general.architecture") : "";
  j["architecture"] = arch;
  if (g->Has("general.name")) j["name"] = GgufValueJson(*g, "general.name");
  if (g->Has("general.file_type")) j["file_type"] = GgufValueJson(*g, "general.file_type");

  OJson config = OJson::object();
  for (const char* k : {"block_count", "embedding_length", "feed_forward_length",
                        "attention.head_count", "attention.head_count_kv", "attention.key_length",
                        "context_length", "rope.dimension_count", "rope.freq_base",
                        "attention.layer_norm_rms_epsilon", "expert_count", "expert_used_count",
                        "attention.sliding_window"}) {
    std::string key = arch + "." + k;
    if (g->Has(key)) config[k] = GgufValueJson(*g, key);
  }
  auto tokens = g->GetStringArray("tokenizer.ggml.tokens");
  if (tokens.ok()) config["vocab_size"] = tokens->size();
  j["config"] = std::move(config);

  std::map<std::string, size_t> dtypes;
  uint64_t total = 0;
  for (const GgufTensorInfo& t : g->tensors()) {
    ++dtypes[GgmlTypeInfo(static_cast<uint32_t>(t.type))->name];
    total += t.n_bytes;
  }
  j["tensor_count"] = g->tensors().size();
  j["total_weight_bytes"] = total;
  j["dtypes"] = dtypes;
  OJson tensors = OJson::array();
  for (const GgufTensorInfo& t : g->tensors()) {
    if (!opts.all_tensors && tensors.size() >= opts.max_tensors) break;
    tensors.push_back({{"name", t.name},
                       {"dtype", GgmlTypeInfo(static_cast<uint32_t>(t.type))->name},
                       {"shape", t.shape}});
  }
  j["tensors_listed"] = tensors.size();
  j["tensors"] = std::move(tensors);
  OJson meta = OJson::object();
  for (const std::string& key : g->Keys()) meta[key] = GgufValueJson(*g, key);
  j["metadata"] = std::move(meta);
  return j;
}

bool HasGgufMagic(const std::string& path) {
  auto map = MappedFile::Open(path);
  return map.ok() && (*map)->size() >= 4 && (*map)->view().substr(0, 4) == "GGUF";
}

}  // namespace

Result<OJson> InspectModel(const std::string& path, const InspectOptions& opts) {
  if (IsDirectory(path)) {
    std::vector<std::string> ggufs;
    bool has_safetensors = false;
    std::error_code ec;
    for (const auto& de : std::filesystem::directory_iterator(path, ec)) {
      std::string name = de.path().filename().string();
      if (EndsWith(name, ".safetensors")) has_safetensors = true;
      if (EndsWith(name, ".gguf")) ggufs.push_back(de.path().string());
    }
    if (ec) return Status::IOError(path + ": cannot list directory: " + ec.message());
    if (!has_safetensors && ggufs.size() == 1) return InspectGguf(ggufs[0], opts);
    if (!has_safetensors && ggufs.size() > 1) {
      return Status::InvalidArgument(path + ": holds " + std::to_string(ggufs.size()) +
                                     " .gguf files; name one");
    }
    return InspectSafetensors(path, opts);
  }
  if (!FileExists(path)) return Status::NotFound(path + ": no such file or directory");
  if (EndsWith(path, ".gguf") || HasGgufMagic(path)) return InspectGguf(path, opts);
  if (EndsWith(path, ".safetensors")) return InspectSafetensors(path, opts);
  return Status::InvalidArgument(path + ": not a model directory, .safetensors or .gguf file");
}

}  // namespace llmhost
