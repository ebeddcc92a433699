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
#include "util/thread_team.h"

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

Result<std::unique_ptr<WeightSource>> Model::OpenSource(const std::string& path, bool* interleaved,
                                                        std::vector<float>* freq_factors) {
  if (IsRandomModelSpec(path)) {
    ASSIGN_OR_RETURN(RandomModelParts r, OpenRandomModel(path, &ThreadPool::Default()));
    config_ = std::move(r.config);
    return std::move(r.weights);
  }
  if (IsDirectory(path)) {
    // Config and architecture first: an unknown architecture is reported
    // before anything about its weights.
    ASSIGN_OR_RETURN(config_, LoadModelConfig(path));
    if (config_.model_type == kScriptedModelType) return std::unique_ptr<WeightSource>();  // the caller's case
    auto spec = BuildModelSpec(config_);
    if (!spec.ok()) return spec.status().WithContext(path);
    return OpenSafetensorsSource(path, config_.mlx_quantization, config_.hf_quantization);
  }
  if (!FileExists(path)) return Status::NotFound(path + ": no such model directory or file");
  if (LooksLikeGguf(path)) {
    gguf_ = true;
    return OpenGgufSource(path, &config_, interleaved, freq_factors);
  }
  return Status::InvalidArgument(path + ": not a model directory or a GGUF file");
}

Status Model::BuildSpec(bool interleaved, std::vector<float> freq_factors, const WeightSource& src) {
  auto spec = BuildModelSpec(config_);
  if (!spec.ok()) return spec.status().WithContext(path_);
  spec_ = std::move(spec).value();
  if (interleaved) spec_.rope_pairing = RopePairing::kInterleaved;
  spec_.rope_freq_factors = std::move(freq_factors);
  weight_bytes_ = src.TotalBytes();
  return Status::OK();
}

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, Backend* backend) {
  std::unique_ptr<Model> m(new Model());
  m->backend_ = backend;
  m->path_ = path;
  bool interleaved = false;
  std::vector<float> freq_factors;
  ASSIGN_OR_RETURN(std::unique_ptr<WeightSource> src, m->OpenSource(path, &interleaved, &freq_factors));
  if (!src) return LoadScripted(std::move(m), path);
  RETURN_IF_ERROR(m->BuildSpec(interleaved, std::move(freq_factors), *src));
  RETURN_IF_ERROR(m->Bind(*src));
  // A backend that copied the weights needs the files (or generated tensors)
  // no more: unmapping them gives their pages back (they would count in the
  // process's footprint).
  if (backend->kind() == DeviceKind::kCpu) m->source_ = std::move(src);
  RETURN_IF_ERROR(m->UploadRopeTables());
  return m;
}

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, std::span<Backend* const> backends) {
  if (backends.empty()) return Status::InvalidArgument("a model needs a backend");
  if (backends.size() == 1) return Load(path, backends[0]);
  const int n = static_cast<int>(backends.size());
  std::unique_ptr<Model> m(new Model());
  m->backend_ = backends[0];
  m->path_ = path;
  bool interleaved = false;
  std::vector<float> freq_factors;
  ASSIGN_OR_RETURN(std::unique_ptr<WeightSource> src, m->OpenSource(path, &interleaved, &freq_factors));
  if (!src) return Status::NotSupported(path + ": a scripted test model runs on one device (no --tensor-parallel)");
  RETURN_IF_ERROR(m->BuildSpec(interleaved, std::move(freq_factors), *src));
  auto local = ShardSpec(m->spec_, n);
  if (!local.ok()) return local.status().WithContext(path);
  ASSIGN_OR_RETURN(m->collectives_, MakeCollectives(backends));
  for (int r = 0; r < n; ++r) {
    std::unique_ptr<Model> s(new Model());
    s->backend_ = backends[static_cast<size_t>(r)];
    s->path_ = path;
    s->gguf_ = m->gguf_;
    s->config_ = m->config_;
    s->spec_ = *local;
    s->weight_bytes_ = m->weight_bytes_;
    s->shard_ = ShardInfo{r, n, m->collectives_[static_cast<size_t>(r)].get(), &m->spec_,
                          VocabRows(m->spec_.vocab, r, n)};
    m->shards_.push_back(std::move(s));
  }
  // Layer by layer over the ranks: each stored tensor is read (or generated)
  // once and released after the last rank took its part.
  for (auto& s : m->shards_) RETURN_IF_ERROR(s->BindTop(*src));
  for (auto& s : m->shards_) s->layers_.resize(static_cast<size_t>(m->spec_.n_layers));
  for (int64_t i = 0; i < m->spec_.n_layers; ++i) {
    for (auto& s : m->shards_) {
      RETURN_IF_ERROR(s->BindLayer(*src, i, &s->layers_[static_cast<size_t>(i)]));
    }
  }
  for (auto& s : m->shards_) RETURN_IF_ERROR(s->UploadRopeTables());
  m->embed_scale_ = m->shards_[0]->embed_scale_;
  // CPU ranks read row slices in place: the files stay mapped.
  if (backends[0]->kind() == DeviceKind::kCpu) m->source_ = std::move(src);
  m->team_ = std::make_unique<ThreadTeam>(n);
  return m;
}

std::vector<Backend*> Model::backends() const {
  if (shards_.empty()) return {backend_};
  std::vector<Backend*> out;
  for (const auto& s : shards_) out.push_back(s->backend_);
  return out;
}

void Model::ReleaseWorkspace() {
  for (const auto& s : shards_) s->ReleaseWorkspace();
  backend_->Free(workspace_);
  backend_->Free(staging_);
}

Model::~Model() {
  for (const WeightMatrix& w : prepared_) backend_->ReleaseWeight(w);
  for (DeviceBuffer& b : owned_) backend_->Free(b);
  for (DeviceBuffer& b : rope_tables_) backend_->Free(b);
  backend_->Free(workspace_);
  backend_->Free(staging_);
}

Result<WeightMatrix> Model::Prepare(WeightSource& src, const std::string& module, int64_t rows, int64_t cols,
                                    Split split) {
  ASSIGN_OR_RETURN(WeightMatrix host, src.Matrix(module, rows, cols));
  auto dev = PrepareSplit(host, split);
  if (!dev.ok()) return dev.status().WithContext(src.path() + ": " + module);
  // The backend holds a copy (of every rank's part, once the last rank has taken its own).
  if (backend_->kind() != DeviceKind::kCpu && shard_.rank == shard_.size - 1) src.ReleaseMatrix(module);
  return dev;
}

Result<WeightMatrix> Model::PrepareSplit(const WeightMatrix& host, Split split) {
  WeightMatrix part = host;
  std::vector<uint8_t> storage;
  if (shard_.size > 1 && split != Split::kWhole) {
    const int64_t r = shard_.rank, n = shard_.size;
    auto share = [&](int64_t base, int64_t len) { return RowRange{base + len / n * r, base + len / n * (r + 1)}; };
    Result<WeightMatrix> sliced = Status::Internal("no split");
    switch (split) {
      case Split::kOut: {
        const RowRange one[] = {share(0, host.rows)};
        sliced = SliceRows(host, one, &storage);
        break;
      }
      case Split::kKv: {
        const RowRange one[] = {KvRows(stored_spec(), shard_.rank, shard_.size)};
        sliced = SliceRows(host, one, &storage);
        break;
      }
      case Split::kIn: {
        const RowRange c = share(0, host.cols);
        sliced = SliceCols(host, c.begin, c.end, &storage);
        break;
      }
      case Split::kQkv: {
        const ModelSpec& f = stored_spec();
        const RowRange kv = KvRows(f, shard_.rank, shard_.size);
        const RowRange three[] = {share(0, f.q_dim()), {f.q_dim() + kv.begin, f.q_dim() + kv.end},
                                  {f.q_dim() + f.kv_dim() + kv.begin, f.q_dim() + f.kv_dim() + kv.end}};
        sliced = SliceRows(host, three, &storage);
        break;
      }
      case Split::kGateUp: {
        const int64_t I = host.rows / 2;
        const RowRange two[] = {share(0, I), share(I, I)};
        sliced = SliceRows(host, two, &storage);
        break;
      }
      case Split::kVocab: {
        const RowRange one[] = {shard_.vocab};
        sliced = SliceRows(host, one, &storage);
        break;
      }
      case Split::kWhole: break;
    }
    if (!sliced.ok()) {
      return sliced.status().WithContext("tensor parallel rank " + std::to_string(r) + " of " + std::to_string(n));
    }
    part = *sliced;
  }
  auto dev = backend_->PrepareWeight(part);
  if (!dev.ok()) return dev.status();
  prepared_.push_back(*dev);
  // A CPU backend reads the copy in place; a device has its own.
  if (!storage.empty() && backend_->kind() == DeviceKind::kCpu) host_slices_.push_back(std::move(storage));
  return dev;
}

Result<DeviceBuffer> Model::Upload(const std::vector<float>& host, const std::string& tag) {
  ASSIGN_OR_RETURN(DeviceBuffer b, backend_->Allocate(host.size() * sizeof(float), tag));
  backend_->CopyToDevice(b, 0, host.data(), host.size() * sizeof(float));
  owned_.push_back(b);
  return b;
}

Result<DeviceBuffer> Model::LoadVector(WeightSource& src, const std::string& name, int64_t n, Split split) {
  ASSIGN_OR_RETURN(std::vector<float> v, src.Vector(name, n));
  if (shard_.size > 1 && (split == Split::kOut || split == Split::kKv)) {
    const size_t per = v.size() / static_cast<size_t>(shard_.size), at = per * static_cast<size_t>(shard_.rank);
    const RowRange rows = split == Split::kKv ? KvRows(stored_spec(), shard_.rank, shard_.size)
                                              : RowRange{static_cast<int64_t>(at), static_cast<int64_t>(at + per)};
    v = std::vector<float>(v.begin() + rows.begin, v.begin() + rows.end);
  }
  return Upload(v, name);
}

Result<DeviceBuffer> Model::OptionalVector(WeightSource& src, const std::string& name, int64_t n) {
  if (!src.HasTensor(name)) return DeviceBuffer{};
  return LoadVector(src, name, n);
}

Status Model::Bind(WeightSource& src) {
  RETURN_IF_ERROR(BindTop(src));
  layers_.resize(static_cast<size_t>(spec_.n_layers));
  for (int64_t i = 0; i < spec_.n_layers; ++i) {
    RETURN_IF_ERROR(BindLayer(src, i, &layers_[static_cast<size_t>(i)]));
  }
  return Status::OK();
}

Status Model::BindTop(WeightSource& src) {
  const ModelSpec& s = stored_spec();
  ASSIGN_OR_RETURN(embed_, Prepare(src, "model.embed_tokens", s.vocab, s.hidden, Split::kVocab));
  if (s.tie_embeddings) {
    lm_head_ = embed_;
  } else {
    ASSIGN_OR_RETURN(lm_head_, Prepare(src, "lm_head", s.vocab, s.hidden, Split::kVocab));
  }
  ASSIGN_OR_RETURN(final_norm_, LoadVector(src, "model.norm.weight", s.hidden));
  embed_scale_ = s.scale_embeddings ? EmbeddingScale(s.hidden, embed_) : 1.0f;
  return Status::OK();
}

Status Model::BindLayer(WeightSource& src, int64_t i, LayerWeights* w) {
  const ModelSpec& s = stored_spec();  // the stored shapes; a rank keeps its part
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
    ASSIGN_OR_RETURN(w->qkv, Prepare(src, p + "self_attn.qkv_proj", qd + 2 * kvd, H, Split::kQkv));
  } else {
    ASSIGN_OR_RETURN(w->q, Prepare(src, p + "self_attn.q_proj", qd, H, Split::kOut));
    ASSIGN_OR_RETURN(w->k, Prepare(src, p + "self_attn.k_proj", kvd, H, Split::kKv));
    ASSIGN_OR_RETURN(w->v, Prepare(src, p + "self_attn.v_proj", kvd, H, Split::kKv));
    if (s.qkv_bias) {
      ASSIGN_OR_RETURN(w->q_bias, LoadVector(src, p + "self_attn.q_proj.bias", qd, Split::kOut));
      ASSIGN_OR_RETURN(w->k_bias, LoadVector(src, p + "self_attn.k_proj.bias", kvd, Split::kKv));
      ASSIGN_OR_RETURN(w->v_bias, LoadVector(src, p + "self_attn.v_proj.bias", kvd, Split::kKv));
    }
  }
  ASSIGN_OR_RETURN(w->o, Prepare(src, p + "self_attn.o_proj", H, qd, Split::kIn));
  if (s.o_bias) {
    ASSIGN_OR_RETURN(w->o_bias, LoadVector(src, p + "self_attn.o_proj.bias", H));
  }

  if (s.layers[static_cast<size_t>(i)].moe) {
    const int64_t E = s.n_experts, I = s.moe_intermediate;
    ASSIGN_OR_RETURN(w->router, Prepare(src, p + "mlp.gate", E, H));  // whole: every rank routes
    w->experts.resize(static_cast<size_t>(E));
    if (src.HasMatrix(p + "mlp.switch_mlp.gate_proj")) {  // MLX: stacked [E, rows, cols]
      const std::string sp = p + "mlp.switch_mlp.";
      ASSIGN_OR_RETURN(auto g, src.StackedMatrices(sp + "gate_proj", E, I, H));
      ASSIGN_OR_RETURN(auto u, src.StackedMatrices(sp + "up_proj", E, I, H));
      ASSIGN_OR_RETURN(auto d, src.StackedMatrices(sp + "down_proj", E, H, I));
      for (int64_t e = 0; e < E; ++e) {
        LayerWeights::Expert& x = w->experts[static_cast<size_t>(e)];
        for (auto [dst, v, split] : {std::tuple{&x.gate, &g, Split::kOut}, {&x.up, &u, Split::kOut},
                                     {&x.down, &d, Split::kIn}}) {
          auto prepared = PrepareSplit((*v)[static_cast<size_t>(e)], split);
          if (!prepared.ok()) return prepared.status().WithContext(src.path() + ": " + sp + " expert " + std::to_string(e));
          *dst = *prepared;
        }
      }
      if (backend_->kind() != DeviceKind::kCpu && shard_.rank == shard_.size - 1) {
        for (const char* part : {"gate_proj", "up_proj", "down_proj"}) src.ReleaseMatrix(sp + part);
      }
    } else {
      for (int64_t e = 0; e < E; ++e) {
        const std::string ep = p + "mlp.experts." + std::to_string(e) + ".";
        LayerWeights::Expert& x = w->experts[static_cast<size_t>(e)];
        ASSIGN_OR_RETURN(x.gate, Prepare(src, ep + "gate_proj", I, H, Split::kOut));
        ASSIGN_OR_RETURN(x.up, Prepare(src, ep + "up_proj", I, H, Split::kOut));
        ASSIGN_OR_RETURN(x.down, Prepare(src, ep + "down_proj", H, I, Split::kIn));
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
    w->moe.inter = spec_.moe_intermediate;  // this rank's share
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
    ASSIGN_OR_RETURN(w->gate_up, Prepare(src, p + "mlp.gate_up_proj", 2 * I, H, Split::kGateUp));
  } else {
    ASSIGN_OR_RETURN(w->gate, Prepare(src, p + "mlp.gate_proj", I, H, Split::kOut));
    ASSIGN_OR_RETURN(w->up, Prepare(src, p + "mlp.up_proj", I, H, Split::kOut));
    if (s.mlp_bias) {
      ASSIGN_OR_RETURN(w->gate_bias, LoadVector(src, p + "mlp.gate_proj.bias", I, Split::kOut));
      ASSIGN_OR_RETURN(w->up_bias, LoadVector(src, p + "mlp.up_proj.bias", I, Split::kOut));
    }
  }
  ASSIGN_OR_RETURN(w->down, Prepare(src, p + "mlp.down_proj", H, I, Split::kIn));
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
  if (!shards_.empty()) {
    const std::vector<Backend*> ranks = backends();
    return KvCache::Create(ranks, spec_.n_layers, shards_[0]->spec_.kv_dim(), block_size, n_blocks, dtype,
                           max_blocks);
  }
  return KvCache::Create(backend_, spec_.n_layers, spec_.kv_dim(), block_size, n_blocks, dtype, max_blocks);
}

DType Model::Native16BitType() const {
  if (!shards_.empty()) return shards_[0]->Native16BitType();
  if (embed_.format == WeightFormat::kBF16) return DType::kBF16;
  if (embed_.format == WeightFormat::kMlxAffine && embed_.scale_dtype == DType::kBF16) return DType::kBF16;
  return DType::kF16;
}

}  // namespace llmhost
