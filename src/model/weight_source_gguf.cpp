// WeightSource over a GGUF file (llama family): hyperparameters from the
// `<arch>.*` metadata become a config.json-like ModelConfig, and tensor names
// are translated from Hugging Face's (model.layers.N.self_attn.q_proj) to
// GGUF's (blk.N.attn_q).
//
// GGUF Llama files store Q and K rows permuted so that llama.cpp's
// interleaved-pair RoPE reproduces Hugging Face's half-split rotation; the
// weights are used as stored, with interleaved RoPE (no copy, no
// un-permute). qwen2/qwen3 files are not permuted and use half-split RoPE,
// as llama.cpp's NEOX mode.
//
// A split model (formats/gguf_split.h) is opened by its first part and read
// as one file: metadata from the first part, tensors from whichever holds them.
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "backend/cpu/matmul.h"
#include "formats/gguf_split.h"
#include "model/weight_source.h"

namespace llmhost {

namespace {

using Json = nlohmann::json;

// HF module suffix inside a layer -> GGUF tensor stem.
const std::map<std::string, std::string, std::less<>>& LayerNames() {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"input_layernorm", "attn_norm"},
      {"post_attention_layernorm", "ffn_norm"},
      {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"},
      {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"},
      {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},
  };
  return kNames;
}

// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight"; "" when
// the name has no GGUF counterpart.
std::string ToGgufName(const std::string& hf) {
  std::string base = hf, suffix;
  for (const char* s : {".weight", ".bias"}) {
    const size_t n = std::strlen(s);
    if (base.size() > n && base.compare(base.size() - n, n, s) == 0) {
      suffix = s;
      base.resize(base.size() - n);
      break;
    }
  }
  if (base == "model.embed_tokens") return "token_embd" + suffix;
  if (base == "lm_head") return "output" + suffix;
  if (base == "model.norm") return "output_norm" + suffix;
  const std::string prefix = "model.layers.";
  if (base.rfind(prefix, 0) != 0) return "";
  const size_t dot = base.find('.', prefix.size());
  if (dot == std::string::npos) return "";
  const std::string layer = base.substr(prefix.size(), dot - prefix.size());
  auto it = LayerNames().find(base.substr(dot + 1));
  if (it == LayerNames().end()) return "";
  return "blk." + layer + "." + it->second + suffix;
}

class GgufSource final : public WeightSource {
 public:
  explicit GgufSource(std::unique_ptr<GgufModelFiles> f) : f_(std::move(f)), path_(f_->first().path()) {}

  const std::string& path() const override { return path_; }
  bool HasMatrix(const std::string& module) const override { return HasTensor(module + ".weight"); }
  bool HasTensor(const std::string& name) const override {
    const std::string g = ToGgufName(name);
    return !g.empty() && f_->FindTensor(g) != nullptr;
  }

  Result<WeightMatrix> Matrix(const std::string& module, int64_t rows,
                              int64_t cols) const override {
    ASSIGN_OR_RETURN(const GgufTensorInfo* t, Find(module + ".weight"));
    if (t->shape.size() != 2 || static_cast<int64_t>(t->shape[0]) != cols ||
        static_cast<int64_t>(t->shape[1]) != rows) {
      std::string found = "[";
      for (size_t i = 0; i < t->shape.size(); ++i) {
        found += (i ? ", " : "") + std::to_string(t->shape[i]);
      }
      return Status::InvalidArgument(path_ + ": tensor '" + t->name + "' (" + module +
                                     "): expected ne [" + std::to_string(cols) + ", " +
                                     std::to_string(rows) + "], found " + found + "]");
    }
    WeightMatrix m;
    m.rows = rows;
    m.cols = cols;
    m.data = f_->TensorData(*t);
    switch (t->type) {
      case GgmlType::kF32: m.format = WeightFormat::kF32; break;
      case GgmlType::kF16: m.format = WeightFormat::kF16; break;
      case GgmlType::kBF16: m.format = WeightFormat::kBF16; break;
      case GgmlType::kI8: case GgmlType::kI16: case GgmlType::kI32: case GgmlType::kI64:
      case GgmlType::kF64:
        return Status::NotSupported(path_ + ": tensor '" + t->name + "': type " +
                                    GgmlTypeInfo(static_cast<uint32_t>(t->type))->name +
                                    " is not supported for weights");
      default:
        m.format = WeightFormat::kGgml;
        m.ggml_type = t->type;
    }
    return m;
  }

  Result<std::vector<WeightMatrix>> StackedMatrices(const std::string& module, int64_t, int64_t,
                                                    int64_t) const override {
    return Status::NotSupported(path_ + ": stacked expert tensors ('" + module +
                                "') are not supported in GGUF files");
  }

  Result<std::vector<float>> Vector(const std::string& name, int64_t n) const override {
    ASSIGN_OR_RETURN(const GgufTensorInfo* t, Find(name));
    return ToF32(*t, n);
  }

  Result<std::vector<float>> ToF32(const GgufTensorInfo& t, int64_t n) const {
    if (static_cast<int64_t>(t.n_elements) != n) {
      return Status::InvalidArgument(path_ + ": tensor '" + t.name + "': expected " +
                                     std::to_string(n) + " elements, found " +
                                     std::to_string(t.n_elements));
    }
    const uint8_t* p = f_->TensorData(t);
    std::vector<float> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      switch (t.type) {
        case GgmlType::kF32: std::memcpy(&out[i], p + 4 * i, 4); break;
        case GgmlType::kF16: std::memcpy(&h, p + 2 * i, 2); out[i] = F16ToF32(h); break;
        case GgmlType::kBF16: std::memcpy(&h, p + 2 * i, 2); out[i] = Bf16ToF32(h); break;
        default:
          return Status::NotSupported(path_ + ": tensor '" + t.name +
                                      "': a norm or bias must be F32, F16 or BF16");
      }
    }
    return out;
  }

  uint64_t TotalBytes() const override {
    uint64_t b = 0;
    for (const GgufTensorInfo* t : f_->tensors()) b += t->n_bytes;
    return b;
  }

  const GgufModelFiles& files() const { return *f_; }

 private:
  Result<const GgufTensorInfo*> Find(const std::string& hf_name) const {
    const std::string g = ToGgufName(hf_name);
    const GgufTensorInfo* t = g.empty() ? nullptr : f_->FindTensor(g);
    if (!t) {
      return Status::NotFound(path_ + ": missing tensor '" + (g.empty() ? hf_name : g) + "' (" +
                              hf_name + ")");
    }
    return t;
  }

  std::unique_ptr<GgufModelFiles> f_;
  std::string path_;
};

// The config.json a GGUF model's metadata (its first part) describes.
Result<Json> ConfigFromGguf(const GgufModelFiles& files) {
  const GgufFile& f = files.first();
  ASSIGN_OR_RETURN(std::string arch, f.GetString("general.architecture"));
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3") {
    return Status::NotSupported(f.path() + ": GGUF architecture '" + arch +
                                "' is not supported (llama, qwen2, qwen3)");
  }
  const std::string k = arch + ".";
  auto need_int = [&](const std::string& key) -> Result<int64_t> {
    auto r = f.GetInt(k + key);
    if (!r.ok()) return Status::InvalidArgument(f.path() + ": " + r.status().message());
    return r;
  };
  Json c;
  c["model_type"] = arch;
  ASSIGN_OR_RETURN(int64_t hidden, need_int("embedding_length"));
  ASSIGN_OR_RETURN(int64_t layers, need_int("block_count"));
  ASSIGN_OR_RETURN(int64_t ffn, need_int("feed_forward_length"));
  ASSIGN_OR_RETURN(int64_t heads, need_int("attention.head_count"));
  c["hidden_size"] = hidden;
  c["num_hidden_layers"] = layers;
  c["intermediate_size"] = ffn;
  c["num_attention_heads"] = heads;
  c["num_key_value_heads"] = f.Has(k + "attention.head_count_kv")
                                 ? f.GetInt(k + "attention.head_count_kv").value()
                                 : heads;
  if (heads <= 0) return Status::InvalidArgument(f.path() + ": attention.head_count must be positive");
  int64_t head_dim = hidden / heads;
  if (f.Has(k + "attention.key_length")) {
    ASSIGN_OR_RETURN(head_dim, need_int("attention.key_length"));
  }
  c["head_dim"] = head_dim;
  if (f.Has(k + "context_length")) c["max_position_embeddings"] = f.GetInt(k + "context_length").value();
  if (f.Has(k + "attention.layer_norm_rms_epsilon")) {
    ASSIGN_OR_RETURN(double eps, f.GetFloat(k + "attention.layer_norm_rms_epsilon"));
    c["rms_norm_eps"] = eps;
  }
  Json rope = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  if (f.Has(k + "rope.freq_base")) rope["rope_theta"] = f.GetFloat(k + "rope.freq_base").value();
  if (f.Has(k + "rope.dimension_count") && head_dim > 0) {
    ASSIGN_OR_RETURN(int64_t rd, need_int("rope.dimension_count"));
    rope["partial_rotary_factor"] = static_cast<double>(rd) / static_cast<double>(head_dim);
  }
  if (f.Has(k + "rope.scaling.type")) {
    ASSIGN_OR_RETURN(std::string st, f.GetString(k + "rope.scaling.type"));
    if (st == "linear" || st == "yarn") {
      rope["rope_type"] = st;
      ASSIGN_OR_RETURN(rope["factor"], f.GetFloat(k + "rope.scaling.factor"));
      if (f.Has(k + "rope.scaling.original_context_length")) {
        rope["original_max_position_embeddings"] =
            f.GetInt(k + "rope.scaling.original_context_length").value();
      }
    } else if (st != "none") {
      return Status::NotSupported(f.path() + ": rope scaling '" + st + "' is not supported");
    }
  }
  c["rope_parameters"] = rope;
  const GgufTensorInfo* emb = files.FindTensor("token_embd.weight");
  if (!emb || emb->shape.size() != 2) {
    return Status::InvalidArgument(f.path() + ": missing 2-D tensor 'token_embd.weight'");
  }
  c["vocab_size"] = static_cast<int64_t>(emb->shape[1]);
  c["tie_word_embeddings"] = files.FindTensor("output.weight") == nullptr;
  c["attention_bias"] = files.FindTensor("blk.0.attn_q.bias") != nullptr && arch != "qwen2";
  c["hidden_act"] = "silu";
  if (f.Has("tokenizer.ggml.bos_token_id")) c["bos_token_id"] = f.GetInt("tokenizer.ggml.bos_token_id").value();
  if (f.Has("tokenizer.ggml.eos_token_id")) c["eos_token_id"] = f.GetInt("tokenizer.ggml.eos_token_id").value();
  return c;
}

}  // namespace

Result<std::unique_ptr<WeightSource>> OpenGgufSource(const std::string& path, ModelConfig* config,
                                                     bool* interleaved_rope,
                                                     std::vector<float>* rope_freq_factors) {
  ASSIGN_OR_RETURN(std::unique_ptr<GgufModelFiles> f, GgufModelFiles::Open(path));
  ASSIGN_OR_RETURN(Json cj, ConfigFromGguf(*f));
  ASSIGN_OR_RETURN(*config, ParseModelConfigJson(cj, path));
  *interleaved_rope = config->model_type == "llama";
  rope_freq_factors->clear();
  auto src = std::make_unique<GgufSource>(std::move(f));
  if (const GgufTensorInfo* rf = src->files().FindTensor("rope_freqs.weight")) {
    ASSIGN_OR_RETURN(*rope_freq_factors, src->ToF32(*rf, static_cast<int64_t>(rf->n_elements)));
  }
  return std::unique_ptr<WeightSource>(std::move(src));
}

}  // namespace llmhost
