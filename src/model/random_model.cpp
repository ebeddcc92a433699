// Random-weights models: the spec string, the in-memory weight source over
// synth-model's plan, and the companions (tokenizer, chat template,
// generation config) built as synth-model writes them.
#include "model/random_model.h"

#include <cstdlib>
#include <filesystem>
#include <unordered_map>

#include "model/synth_internal.h"
#include "model/tensor_table.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost {

namespace {

constexpr size_t kAlign = 64;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using Bytes = std::unique_ptr<uint8_t, FreeDeleter>;

// synth-model's tensors, each generated when first asked for and kept until
// released. Not thread-safe (a load binds from one thread).
class RandomTable final : public TensorTable {
 public:
  RandomTable(std::vector<synth::Tensor> tensors, uint64_t seed, ThreadPool* pool)
      : tensors_(std::move(tensors)), seed_(seed), pool_(pool) {
    for (const synth::Tensor& t : tensors_) {
      index_[t.spec.name] = &t;
      total_ += synth::TensorBytes(t);
    }
  }

  bool Has(const std::string& name) const override { return index_.count(name) > 0; }

  Result<TensorView> Get(const std::string& name) const override {
    auto it = index_.find(name);
    if (it == index_.end()) return Status::NotFound("missing tensor '" + name + "'");
    const synth::Tensor& t = *it->second;
    const size_t n_bytes = synth::TensorBytes(t);
    Bytes& b = made_[name];
    if (!b) {
      // Not zeroed: the generating threads touch each page first.
      b.reset(static_cast<uint8_t*>(std::aligned_alloc(kAlign, (n_bytes + kAlign - 1) / kAlign * kAlign)));
      if (!b) return Status::ResourceExhausted("tensor '" + name + "': cannot allocate " + std::to_string(n_bytes) + " bytes");
      synth::FillElements(t, seed_, 0, synth::NumElements(t.spec), reinterpret_cast<char*>(b.get()), pool_);
    }
    TensorView v;
    v.dtype = t.spec.dtype;
    v.shape = t.spec.shape;
    v.data = b.get();
    v.n_bytes = n_bytes;
    return v;
  }

  uint64_t TotalBytes() const override { return total_; }
  void Release(const std::string& name) const override { made_.erase(name); }

 private:
  std::vector<synth::Tensor> tensors_;
  uint64_t seed_;
  ThreadPool* pool_;
  std::unordered_map<std::string, const synth::Tensor*> index_;
  uint64_t total_ = 0;
  mutable std::unordered_map<std::string, Bytes> made_;
};

Status BadSpec(const std::string& spec, const std::string& what) {
  return Status::InvalidArgument("'" + spec + "': " + what +
                                 " (expected random:ARCH:DTYPE:CONFIG.json[:SEED], e.g. "
                                 "random:llama:mlx4:llama8b.json:1)");
}

// DTYPE[-gG] -> (dtype, group size).
Status ParseDtypeField(const std::string& spec, const std::string& field, SynthOptions* o) {
  std::string name = field;
  if (const size_t dash = field.find("-g"); dash != std::string::npos) {
    name = field.substr(0, dash);
    const std::string g = field.substr(dash + 2);
    char* end = nullptr;
    const long v = std::strtol(g.c_str(), &end, 10);
    if (g.empty() || *end != '\0' || v <= 0 || v > 4096) {
      return BadSpec(spec, "group size '" + g + "' is not a number (mlx4-g32, mlx8-g128)");
    }
    o->group_size = static_cast<int>(v);
  }
  auto d = ParseSynthDType(name);
  if (!d.ok()) return BadSpec(spec, "DTYPE '" + name + "' (bf16, mlx4, mlx8, fp8, gptq4, awq4 or w4a16)");
  if ((*d == SynthDType::kBF16 || *d == SynthDType::kFp8) && name != field) {
    return BadSpec(spec, name + " takes no group size");
  }
  o->dtype = *d;
  return Status::OK();
}

Result<synth::ModelPlan> PlanOf(const std::string& path) {
  ASSIGN_OR_RETURN(RandomModelSpec r, ParseRandomModelSpec(path));
  auto plan = synth::PlanModel(r.options);
  if (!plan.ok()) return plan.status().WithContext(path);
  return plan;
}

}  // namespace

bool IsRandomModelSpec(std::string_view path) { return path.rfind(kRandomModelPrefix, 0) == 0; }

Result<RandomModelSpec> ParseRandomModelSpec(const std::string& spec) {
  if (!IsRandomModelSpec(spec)) return BadSpec(spec, "no 'random:' prefix");
  std::vector<std::string> f;
  for (size_t b = kRandomModelPrefix.size();;) {
    const size_t e = spec.find(':', b);
    f.push_back(spec.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  if (f.size() < 3) return BadSpec(spec, "too few fields");
  RandomModelSpec r;
  r.options.arch = f[0];
  RETURN_IF_ERROR(ParseDtypeField(spec, f[1], &r.options));
  // The last field is the seed when it is a number (a config path may hold ':').
  size_t config_end = f.size();
  if (f.size() > 3) {
    const std::string& s = f.back();
    char* end = nullptr;
    const unsigned long long seed = std::strtoull(s.c_str(), &end, 10);
    if (!s.empty() && *end == '\0' && s[0] != '-') {
      r.options.seed = seed;
      config_end = f.size() - 1;
    }
  }
  std::string config = f[2];
  for (size_t i = 3; i < config_end; ++i) config += ":" + f[i];
  if (config.empty()) return BadSpec(spec, "no CONFIG file");
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(config, kJsonModelFileMaxBytes));
  ASSIGN_OR_RETURN(r.options.config, ParseOrderedJson(text, config, kJsonModelFileMaxBytes));
  if (!r.options.config.is_object()) return Status::InvalidArgument(config + ": expected a JSON object");
  r.name = std::filesystem::path(config).stem().string();
  return r;
}

std::string RandomModelSpecString(const std::string& arch, const std::string& dtype, int group_size,
                                  const std::string& config_path, uint64_t seed) {
  std::string d = dtype;
  if (dtype != "bf16" && dtype != "fp8" && group_size != 64) d += "-g" + std::to_string(group_size);
  return std::string(kRandomModelPrefix) + arch + ":" + d + ":" + config_path + ":" + std::to_string(seed);
}

Result<RandomModelParts> OpenRandomModel(const std::string& path, ThreadPool* pool) {
  ASSIGN_OR_RETURN(RandomModelSpec r, ParseRandomModelSpec(path));
  auto plan_or = synth::PlanModel(r.options);
  if (!plan_or.ok()) return plan_or.status().WithContext(path);
  synth::ModelPlan& plan = *plan_or;
  RandomModelParts parts;
  ASSIGN_OR_RETURN(parts.config, ParseModelConfigJson(nlohmann::json::parse(plan.config.dump()), path));
  parts.weight_bytes = plan.weight_bytes;
  // The completed config names the architecture, shape and quantization;
  // with the seed it fixes every byte (the generator's version tags it).
  parts.identity = Sha256Of("llmhost random weights v1\nseed " + std::to_string(r.options.seed) + "\n" +
                            plan.config.dump());
  parts.weights = OpenTensorTableSource(std::make_unique<RandomTable>(std::move(plan.tensors), r.options.seed, pool),
                                        parts.config.mlx_quantization, path, parts.config.hf_quantization);
  return parts;
}

Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& path) {
  if (!IsRandomModelSpec(path)) return Tokenizer::FromPath(path);
  ASSIGN_OR_RETURN(synth::ModelPlan plan, PlanOf(path));
  auto tok = Tokenizer::FromJson(nlohmann::json::parse(synth::TokenizerJson(plan.spec.vocab)));
  if (!tok.ok()) return tok.status().WithContext(path);
  return tok;
}

Result<ModelChatTemplates> LoadModelChatTemplatesAt(const std::string& path, const Tokenizer& tok) {
  if (!IsRandomModelSpec(path)) return LoadChatTemplatesAt(path, tok);
  ASSIGN_OR_RETURN(synth::ModelPlan plan, PlanOf(path));
  // What LoadModelChatTemplates reads from synth-model's tokenizer_config.json.
  const nlohmann::ordered_json c = synth::TokenizerConfig(plan.spec.vocab, plan.spec.max_position_embeddings);
  auto text = [&](const char* key) { return c[key].is_string() ? c[key].get<std::string>() : std::string(); };
  ModelChatTemplates t;
  t.default_template = text("chat_template");
  t.bos_token = text("bos_token");
  t.eos_token = text("eos_token");
  return t;
}

Result<GenerationConfig> LoadModelGenerationConfig(const std::string& path) {
  if (!IsRandomModelSpec(path)) {
    if (!IsDirectory(path)) return Status::NotFound(path + ": a GGUF file has no generation_config.json");
    return LoadGenerationConfig(path);
  }
  ASSIGN_OR_RETURN(synth::ModelPlan plan, PlanOf(path));
  return ParseGenerationConfig(synth::GenerationConfigJson(plan.spec.vocab).dump(), path);
}

}  // namespace llmhost
