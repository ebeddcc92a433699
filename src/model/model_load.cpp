// Model::Load: opens the weights (safetensors directory, GGUF file or a
// random-weights spec generating them in memory), builds
// the architecture spec and binds every tensor the spec needs, checking its
// shape. Matrices stay in the mapped files (PrepareWeight views); norms and
// biases are converted to f32 device buffers.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "backend/cpu/matmul.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/scripted_model.h"
#include "model/rope_freqs.h"
#include "util/file.h"

namespace llmhost {

namespace {

bool LooksLikeGguf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

// sqrt(hidden) as transformers' Gemma embedding applies it: an f32 scalar
// cast to the embedding table's dtype (bf16 / f16 tables round it).
float EmbeddingScale(int64_t hidden, const WeightMatrix& embed) {
  const float s = static_cast<float>(std::sqrt(static_cast<double>(hidden)));
  switch (embed.format) {
    case WeightFormat::kBF16: return Bf16ToF32(F32ToBf16(s));
    case WeightFormat::kF16: return F16ToF32(F32ToF16(s));
    case WeightFormat::kMlxAffine:  // mlx-lm: mx.array(sqrt(hidden), bfloat16) for bf16 models
      return embed.scale_dtype == DType::kBF16   ? Bf16ToF32(F32ToBf16(s))
             : embed.scale_dtype == DType::kF16 ? F16ToF32(F32ToF16(s))
                                                : s;
    default: return s;  // f32 tables and GGUF (llama.cpp scales in f32)
  }
}

}  // namespace

uint64_t ResidentBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      unsigned long long kb = 0;
      if (std::sscanf(line.c_str() + 6, "%llu", &kb) == 1) return kb * 1024;
    }
  }
  return 0;
}

// A scripted test model: a llama's weights (bound as usual, never computed
// with) and the script that chooses its output.
Result<std::unique_ptr<Model>> Model::LoadScripted(std::unique_ptr<Model> m, const std::string& path) {
  ModelConfig as_llama = m->config_;
  as_llama.model_type = "llama";
  auto spec = BuildModelSpec(as_llama);
  if (!spec.ok()) return spec.status().WithContext(path);
  m->spec_ = std::move(spec).value();
  ASSIGN_OR_RETURN(std::unique_ptr<WeightSource> src, OpenSafetensorsSource(path, m->config_.mlx_quantization, m->config_.hf_quantization));
  m->weight_bytes_ = src->TotalBytes();
  RETURN_IF_ERROR(m->Bind(*src));
  if (m->backend_->kind() == DeviceKind::kCpu) m->source_ = std::move(src);
  RETURN_IF_ERROR(m->UploadRopeTables());
  if (m->config_.eos_token_ids.empty()) {
    return Status::InvalidArgument(path + ": a scripted model needs eos_token_id in config.json");
  }
  auto script = ScriptedOutput::Load(path, m->spec_.vocab, static_cast<int32_t>(m->config_.eos_token_ids.front()));
  if (!script.ok()) return script.status();
  m->script_ = std::move(*script);
  return m;
}

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, Backend* backend) {
  std::unique_ptr<Model> m(new Model());
  m->backend_ = backend;
  m->path_ = path;
  std::unique_ptr<WeightSource> src;
  bool interleaved = false;
  std::vector<float> freq_factors;
  if (IsRandomModelSpec(path)) {
    ASSIGN_OR_RETURN(RandomModelParts r, OpenRandomModel(path, &ThreadPool::Default()));
    m->config_ = std::move(r.config);
    src = std::move(r.weights);
  } else if (IsDirectory(path)) {
    // Config and architecture first: an unknown architecture is reported
    // before anything about its weights.
    ASSIGN_OR_RETURN(m->config_, LoadModelConfig(path));
    if (m->config_.model_type == kScriptedModelType) return LoadScripted(std::move(m), path);
    auto spec = BuildModelSpec(m->config_);
    if (!spec.ok()) return spec.status().WithContext(path);
    ASSIGN_OR_RETURN(src, OpenSafetensorsSource(path, m->config_.mlx_quantization, m->config_.hf_quantization));
  } else if (!FileExists(path)) {
    return Status::NotFound(path + ": no such model directory or file");
  } else if (LooksLikeGguf(path)) {
    m->gguf_ = true;
    ASSIGN_OR_RETURN(src, OpenGgufSource(path, &m->config_, &interleaved, &freq_factors));
  } else {
    return Status::InvalidArgument(path + ": not a model directory or a GGUF file");
  }
  auto spec = BuildModelSpec(m->config_);
  if (!spec.ok()) return spec.status().WithContext(path);
  m->spec_ = std::move(spec).value();
  if (interleaved) m->spec_.rope_pairing = RopePairing::kInterleaved;
  m->spec_.rope_freq_factors = std::move(freq_factors);
  m->weight_bytes_ = src->TotalBytes();
  RETURN_IF_ERROR(m->Bind(*src));
  // A backend that copied the weights needs the files (or generated tensors)
  // no more: unmapping them gives their pages back (they would count in the
  // process's footprint).
  if (backend->kind() == DeviceKind::kCpu) m->source_ = std::move(src);
  RETURN_IF_ERROR(m->UploadRopeTables());
  return m;
}

Model::~Model() {
  for (const WeightMatrix& w : prepared_) backend_->ReleaseWeight(w);
  for (DeviceBuffer& b : owned_) backend_->Free(b);
  for (DeviceBuffer& b : rope_tables_) backend_->Free(b);
  backend_->Free(workspace_);
  backend_->Free(staging_);
}

Result<WeightMatrix> Model::Prepare(WeightSource& src, const std::string& module, int64_t rows,
                                    int64_t cols) {
  ASSIGN_OR_RETURN(WeightMatrix host, src.Matrix(module, rows, cols));
  auto dev = backend_->PrepareWeight(host);
  if (!dev.ok()) return dev.status().WithContext(src.path() + ": " + module);
  prepared_.push_back(*dev);
  if (backend_->kind() != DeviceKind::kCpu) src.ReleaseMatrix(module);  // the backend holds a copy
  return dev;
}

Result<DeviceBuffer> Model::Upload(const std::vector<float>& host, const std::string& tag) {
  ASSIGN_OR_RETURN(DeviceBuffer b, backend_->Allocate(host.size() * sizeof(float), tag));
  backend_->CopyToDevice(b, 0, host.data(), host.size() * sizeof(float));
  owned_.push_back(b);
  return b;
}

Result<DeviceBuffer> Model::LoadVector(WeightSource& src, const std::string& name, int64_t n) {
  ASSIGN_OR_RETURN(std::vector<float> v, src.Vector(name, n));
  return Upload(v, name);
}

Result<DeviceBuffer> Model::OptionalVector(WeightSource& src, const std::string& name, int64_t n) {
  if (!src.HasTensor(name)) return DeviceBuffer{};
  return LoadVector(src, name, n);
}

Status Model::Bind(WeightSource& src) {
  const ModelSpec& s = spec_;
  ASSIGN_OR_RETURN(embed_, Prepare(src, "model.embed_tokens", s.vocab, s.hidden));
  if (s.tie_embeddings) {
    lm_head_ = embed_;
  } else {
    ASSIGN_OR_RETURN(lm_head_, Prepare(src, "lm_head", s.vocab, s.hidden));
  }
  ASSIGN_OR_RETURN(final_norm_, LoadVector(src, "model.norm.weight", s.hidden));
  embed_scale_ = s.scale_embeddings ? EmbeddingScale(s.hidden, embed_) : 1.0f;
  layers_.resize(static_cast<size_t>(s.n_layers));
  for (int64_t i = 0; i < s.n_layers; ++i) {
    RETURN_IF_ERROR(BindLayer(src, i, &layers_[static_cast<size_t>(i)]));
  }
  return Status::OK();
}

Status Model::BindLayer(WeightSource& src, int64_t i, LayerWeights* w) {
  const ModelSpec& s = spec_;
  const std::string p = "model.layers." + std::to_string(i) + ".";
  const int64_t H = s.hidden, qd = s.q_dim(), kvd = s.kv_dim();
  ASSIGN_OR_RETURN(w->attn_norm, LoadVector(src, p + "input_layernorm.weight", H));
  if (s.sandwich_norms) {
    ASSIGN_OR_RETURN(w->post_attn_norm, LoadVector(src, p + "post_attention_layernorm.weight", H));
    ASSIGN_OR_RETURN(w->pre_ffn_norm, LoadVector(src, p + "pre_feedforward_layernorm.weight", H));
    ASSIGN_OR_RETURN(w->post_ffn_norm, LoadVector(src, p + "post_feedforward_layernorm.weight", H));
  } else {
    ASSIGN_OR_RETURN(w->pre_ffn_norm, LoadVector(src, p + "post_attention_layernorm.weight", H));
  }
  if (s.qk_norm) {
    ASSIGN_OR_RETURN(w->q_norm, LoadVector(src, p + "self_attn.q_norm.weight", s.head_dim));
    ASSIGN_OR_RETURN(w->k_norm, LoadVector(src, p + "self_attn.k_norm.weight", s.head_dim));
  }
  if (s.fused_qkv) {
    ASSIGN_OR_RETURN(w->qkv, Prepare(src, p + "self_attn.qkv_proj", qd + 2 * kvd, H));
  } else {
    ASSIGN_OR_RETURN(w->q, Prepare(src, p + "self_attn.q_proj", qd, H));
    ASSIGN_OR_RETURN(w->k, Prepare(src, p + "self_attn.k_proj", kvd, H));
    ASSIGN_OR_RETURN(w->v, Prepare(src, p + "self_attn.v_proj", kvd, H));
    if (s.qkv_bias) {
      ASSIGN_OR_RETURN(w->q_bias, LoadVector(src, p + "self_attn.q_proj.bias", qd));
      ASSIGN_OR_RETURN(w->k_bias, LoadVector(src, p + "self_attn.k_proj.bias", kvd));
      ASSIGN_OR_RETURN(w->v_bias, LoadVector(src, p + "self_attn.v_proj.bias", kvd));
    }
  }
  ASSIGN_OR_RETURN(w->o, Prepare(src, p + "self_attn.o_proj", H, qd));
  if (s.o_bias) {
    ASSIGN_OR_RETURN(w->o_bias, LoadVector(src, p + "self_attn.o_proj.bias", H));
  }

  if (s.layers[static_cast<size_t>(i)].moe) {
    const int64_t E = s.n_experts, I = s.moe_intermediate;
    ASSIGN_OR_RETURN(w->router, Prepare(src, p + "mlp.gate", E, H));
    w->experts.resize(static_cast<size_t>(E));
    if (src.HasMatrix(p + "mlp.switch_mlp.gate_proj")) {  // MLX: stacked [E, rows, cols]
      const std::string sp = p + "mlp.switch_mlp.";
      ASSIGN_OR_RETURN(auto g, src.StackedMatrices(sp + "gate_proj", E, I, H));
      ASSIGN_OR_RETURN(auto u, src.StackedMatrices(sp + "up_proj", E, I, H));
      ASSIGN_OR_RETURN(auto d, src.StackedMatrices(sp + "down_proj", E, H, I));
      for (int64_t e = 0; e < E; ++e) {
        LayerWeights::Expert& x = w->experts[static_cast<size_t>(e)];
        for (auto [dst, v] : {std::pair{&x.gate, &g}, {&x.up, &u}, {&x.down, &d}}) {
          ASSIGN_OR_RETURN(*dst, backend_->PrepareWeight((*v)[static_cast<size_t>(e)]));
          prepared_.push_back(*dst);
        }
      }
      if (backend_->kind() != DeviceKind::kCpu) {
        for (const char* part : {"gate_proj", "up_proj", "down_proj"}) src.ReleaseMatrix(sp + part);
      }
    } else {
      for (int64_t e = 0; e < E; ++e) {
        const std::string ep = p + "mlp.experts." + std::to_string(e) + ".";
        LayerWeights::Expert& x = w->experts[static_cast<size_t>(e)];
        ASSIGN_OR_RETURN(x.gate, Prepare(src, ep + "gate_proj", I, H));
        ASSIGN_OR_RETURN(x.up, Prepare(src, ep + "up_proj", I, H));
        ASSIGN_OR_RETURN(x.down, Prepare(src, ep + "down_proj", H, I));
      }
    }
    if (backend_->kind() != DeviceKind::kCpu) {
      for (const LayerWeights::Expert& x : w->experts) {
        if (x.gate.col_order || x.up.col_order || x.down.col_order) {
          return Status::NotSupported(src.path() + ": layer " + std::to_string(i) +
                                      ": act-order GPTQ experts (desc_act) run on the CPU only for now");
        }
      }
    }
    w->moe = MoeExperts{};
    w->moe.hidden = H;
    w->moe.inter = I;
    w->moe.activation = s.activation;
    for (const LayerWeights::Expert& x : w->experts) {  // `experts` is not resized again
      w->moe.gate.push_back(&x.gate);
      w->moe.up.push_back(&x.up);
      w->moe.down.push_back(&x.down);
    }
    return Status::OK();
  }
  const int64_t I = s.intermediate;
  if (I <= 0) return Status::InvalidArgument(path_ + ": intermediate_size must be positive");
  if (s.fused_gate_up) {
    ASSIGN_OR_RETURN(w->gate_up, Prepare(src, p + "mlp.gate_up_proj", 2 * I, H));
  } else {
    ASSIGN_OR_RETURN(w->gate, Prepare(src, p + "mlp.gate_proj", I, H));
    ASSIGN_OR_RETURN(w->up, Prepare(src, p + "mlp.up_proj", I, H));
    if (s.mlp_bias) {
      ASSIGN_OR_RETURN(w->gate_bias, LoadVector(src, p + "mlp.gate_proj.bias", I));
      ASSIGN_OR_RETURN(w->up_bias, LoadVector(src, p + "mlp.up_proj.bias", I));
    }
  }
  ASSIGN_OR_RETURN(w->down, Prepare(src, p + "mlp.down_proj", H, I));
  if (s.mlp_bias) {
    ASSIGN_OR_RETURN(w->down_bias, LoadVector(src, p + "mlp.down_proj.bias", H));
  }
  return Status::OK();
}

Result<std::vector<float>> Model::RopeTable(int rope_index, int64_t seq_len) const {
  ASSIGN_OR_RETURN(RopeFrequencies f,
                   ComputeRopeFrequencies(spec_.ropes[static_cast<size_t>(rope_index)],
                                          spec_.head_dim, spec_.max_position_embeddings, seq_len));
  const std::vector<float>& ff = spec_.rope_freq_factors;
  if (!ff.empty()) {
    if (ff.size() != f.inv_freq.size()) {
      return Status::InvalidArgument(path_ + ": rope_freqs has " + std::to_string(ff.size()) +
                                     " values, expected " + std::to_string(f.inv_freq.size()));
    }
    for (size_t i = 0; i < ff.size(); ++i) f.inv_freq[i] /= ff[i];
  }
  return f.inv_freq;
}

Status Model::UploadRopeTables() {
  for (size_t r = 0; r < spec_.ropes.size(); ++r) {
    ASSIGN_OR_RETURN(RopeFrequencies f, ComputeRopeFrequencies(spec_.ropes[r], spec_.head_dim,
                                                               spec_.max_position_embeddings, 0));
    ASSIGN_OR_RETURN(std::vector<float> table, RopeTable(static_cast<int>(r), 0));
    if (RopeDependsOnLength(spec_.ropes[r])) {
      // Check the long-sequence regime too, so that Forward cannot fail on it.
      RETURN_IF_ERROR(RopeTable(static_cast<int>(r), spec_.max_position_embeddings + 1).status());
    }
    rope_rot_dim_.push_back(f.rot_dim);
    rope_scaling_.push_back(f.attention_scaling);
    ASSIGN_OR_RETURN(DeviceBuffer b, backend_->Allocate(table.size() * sizeof(float), "rope table"));
    backend_->CopyToDevice(b, 0, table.data(), table.size() * sizeof(float));
    rope_tables_.push_back(b);
  }
  return Status::OK();
}

Result<std::unique_ptr<KvCache>> Model::CreateKvCache(int64_t n_blocks, int64_t block_size, DType dtype,
                                                      int64_t max_blocks) const {
  return KvCache::Create(backend_, spec_.n_layers, spec_.kv_dim(), block_size, n_blocks, dtype, max_blocks);
}

DType Model::Native16BitType() const {
  if (embed_.format == WeightFormat::kBF16) return DType::kBF16;
  if (embed_.format == WeightFormat::kMlxAffine && embed_.scale_dtype == DType::kBF16) return DType::kBF16;
  return DType::kF16;
}

}  // namespace llmhost
