#include "pool/cpu_engine_factory.h"

#include <algorithm>
#include <chrono>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_features.h"
#include "model/model.h"
#include "model/random_model.h"
#include "pool/embedding_loader.h"
#include "formats/gguf.h"
#include "formats/gguf_split.h"
#include "formats/hf_config.h"
#include "util/log.h"

namespace llmhost {

namespace {

constexpr int64_t kUnknownContext = 8192;  // as Engine::Create assumes

class CpuLoadedEngine final : public LoadedEngine {
 public:
  CpuLoadedEngine(std::shared_ptr<ServedModel> m, int64_t chunk, int threads, DType kv_dtype, bool kv_fixed,
                  uint64_t workspace_bytes)
      : m_(std::move(m)),
        chunk_(chunk),
        threads_(threads),
        kv_dtype_(kv_dtype),
        kv_fixed_(kv_fixed),
        workspace_bytes_(workspace_bytes) {}
  std::shared_ptr<ServedModel> served() const override { return m_; }
  BudgetBytes DeviceActiveBytes() const override {
    BudgetBytes out{};
    const bool cpu = m_->backend->kind() == DeviceKind::kCpu;
    out[BudgetIndex(cpu ? Budget::kHost : Budget::kDevice)] = m_->backend->memory_stats().bytes_in_use;
    // A split model's other ranks: the host's, or the next GPUs' budgets.
    for (size_t r = 0; r < m_->ranks.size(); ++r) {
      const uint64_t b = m_->ranks[r]->memory_stats().bytes_in_use;
      const size_t i = cpu ? BudgetIndex(Budget::kHost) : BudgetIndex(GpuBudget(static_cast<int>(r) + 1));
      if (i < out.size()) out[i] += b;
    }
    return out;
  }
  int64_t ActiveRequests() const override {
    const EngineStats s = m_->engine->Stats();
    return s.running + s.waiting;
  }
  void Stop() override { m_->engine->Shutdown(); }
  void ReleaseCaches() override { m_->engine->ReleaseKvMemory(); }
  int64_t context_length() const override { return m_->engine->context_length(); }
  PrefillDims prefill_dims() const override {
    const ModelSpec& s = m_->model->spec();
    // A split model's ranks each hold the same share: one rank's prompt is
    // priced (on its first GPU, which holds that share like the others).
    const int64_t tp = m_->model->tensor_parallel();
    PrefillDims d;
    d.n_layers = s.n_layers;
    d.n_heads = s.n_heads / tp;
    d.n_kv_heads = s.n_kv_heads / tp;
    d.head_dim = s.head_dim;
    d.hidden = s.hidden;
    d.intermediate = std::max(s.intermediate, s.moe_intermediate) / tp;
    d.kv_dtype_bytes = static_cast<int64_t>(DTypeSize(kv_dtype_));
    d.prefill_chunk = chunk_;
    // The CPU attention kernel keeps one score row per task (a thread's
    // query row over the GQA group), never chunk × heads rows.
    d.attention_scratch_rows = static_cast<int64_t>(threads_) * std::max<int64_t>(1, s.n_heads / std::max<int64_t>(1, s.n_kv_heads));
    // A fixed cache was paid for at admission; a growing one claims each
    // prompt's blocks as they come.
    d.kv_preallocated = kv_fixed_;
    // What ResidentEstimate priced for activations (WorkspaceBytes).
    d.priced_workspace_bytes = workspace_bytes_;
    d.budget = m_->backend->kind() == DeviceKind::kCpu ? Budget::kHost : Budget::kDevice;
    return d;
  }

 private:
  std::shared_ptr<ServedModel> m_;
  int64_t chunk_;
  int threads_;
  DType kv_dtype_;
  bool kv_fixed_;
  uint64_t workspace_bytes_;
};

}  // namespace

namespace {

// config.json of a directory, or a random-weights model's completed config.
Result<ModelConfig> ConfigOf(const DiscoveredModel& model) {
  if (!model.random()) return LoadModelConfig(model.path + "/config.json");
  ASSIGN_OR_RETURN(RandomModelParts r, OpenRandomModel(model.path, nullptr));
  return r.config;
}

}  // namespace

Result<ModelShape> ReadModelShape(const DiscoveredModel& model) {
  ModelShape s;
  if (!model.gguf()) {
    ASSIGN_OR_RETURN(ModelConfig c, ConfigOf(model));
    s.n_layers = c.num_hidden_layers;
    s.n_heads = c.num_attention_heads;
    s.n_kv_heads = c.num_key_value_heads > 0 ? c.num_key_value_heads : c.num_attention_heads;
    s.head_dim = c.head_dim > 0 ? c.head_dim : (s.n_heads > 0 ? c.hidden_size / s.n_heads : 0);
    s.hidden = c.hidden_size;
    s.intermediate = c.intermediate_size;
    s.vocab = c.vocab_size;
    s.context = c.max_position_embeddings;
    return s;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(model.path));
  ASSIGN_OR_RETURN(std::string arch, f->GetString("general.architecture"));
  auto get = [&](const std::string& key) -> int64_t {
    auto v = f->GetInt(arch + "." + key);
    return v.ok() ? *v : 0;
  };
  s.n_layers = get("block_count");
  s.n_heads = get("attention.head_count");
  s.n_kv_heads = get("attention.head_count_kv");
  if (s.n_kv_heads <= 0) s.n_kv_heads = s.n_heads;
  s.hidden = get("embedding_length");
  s.head_dim = get("attention.key_length");
  if (s.head_dim <= 0 && s.n_heads > 0) s.head_dim = s.hidden / s.n_heads;
  s.intermediate = get("feed_forward_length");
  s.context = get("context_length");
  if (f->Has("tokenizer.ggml.tokens")) {
    auto toks = f->GetStringArray("tokenizer.ggml.tokens");
    if (toks.ok()) s.vocab = static_cast<int64_t>(toks->size());
  }
  return s;
}

uint64_t KvPoolBytes(const ModelShape& shape, const EngineOptions& o) {
  if (shape.n_layers <= 0 || shape.n_kv_heads <= 0 || shape.head_dim <= 0) return 0;
  const int64_t bs = std::max<int64_t>(1, o.block_size);
  const uint64_t block_bytes =
      2 * static_cast<uint64_t>(shape.n_layers * shape.n_kv_heads * shape.head_dim * bs) * DTypeSize(o.kv_dtype);
  if (o.kv_blocks > 0) return static_cast<uint64_t>(o.kv_blocks) * block_bytes;
  // A growing cache holds its floor at first; the rest is claimed as it grows.
  int64_t context = o.max_context > 0 ? o.max_context : shape.context;
  if (shape.context > 0) context = std::min(context, shape.context);
  const int64_t floor_tokens = std::min<int64_t>(o.kv_floor_tokens, context > 0 ? context : kUnknownContext);
  const int64_t blocks = std::max<int64_t>(1, (floor_tokens + bs - 1) / bs);
  return static_cast<uint64_t>(blocks) * block_bytes;
}

uint64_t WorkspaceBytes(const ModelShape& s, const EngineOptions& o) {
  const int64_t chunk = o.prefill_chunk_tokens > 0 ? o.prefill_chunk_tokens : std::max<int64_t>(s.context, 512);
  // As the forward pass lays it out: sizes rounded up to their bucket.
  const int64_t rows = BatchBucket(chunk + o.max_concurrent_requests);
  const int64_t q = s.n_heads * s.head_dim, kv = s.n_kv_heads * s.head_dim;
  const int64_t per_row = 4 * s.hidden + 2 * q + 2 * kv + 3 * s.intermediate;
  const int64_t logits = BatchBucket(o.max_concurrent_requests + 1) * (s.hidden + s.vocab);
  return static_cast<uint64_t>(std::max<int64_t>(0, rows * per_row + logits)) * sizeof(float);
}

CpuEngineFactory::CpuEngineFactory(CpuEngineFactoryOptions options) : options_(std::move(options)) {
  if (!options_.threads) options_.threads = &ThreadPool::Default();
}

EngineOptions CpuEngineFactory::EngineOptionsFor(const ModelSettings& settings) const {
  EngineOptions o = options_.engine;
  if (settings.max_context_window) o.max_context = *settings.max_context_window;
  if (DeviceFor(settings).kind != DeviceKind::kCpu) o.prefill_chunk_tokens = options_.gpu_prefill_chunk_tokens;
  // "auto" is a 16-bit type whichever the model's is: priced as BF16 until loaded.
  o.kv_dtype = options_.kv_dtype.value_or(DType::kBF16);
  return o;
}

Result<uint64_t> GpuWeightBytes(const DiscoveredModel& model) {
  if (!model.gguf()) return model.weight_bytes;  // safetensors or random: f32/f16/bf16 and MLX, kept as stored
  ASSIGN_OR_RETURN(std::unique_ptr<GgufModelFiles> f, GgufModelFiles::Open(model.path));
  uint64_t bytes = 0;
  for (const GgufTensorInfo* t : f->tensors()) {
    if (CudaReadsGgmlInPlace(t->type)) {
      bytes += t->n_bytes;
    } else {
      bytes += 4 * t->n_elements;
    }
  }
  return bytes;
}

DeviceSpec CpuEngineFactory::DeviceFor(const ModelSettings& settings) const {
  if (settings.device) {
    auto d = ParseDevice(*settings.device);  // validated with the settings
    if (d.ok()) return *d;
  }
  return options_.device;
}

int CpuEngineFactory::TensorParallelFor(const ModelSettings& settings) const {
  if (settings.tensor_parallel) return static_cast<int>(*settings.tensor_parallel);
  // A model its own setting sends to the CPU (too large for the GPUs) is not
  // split by the server's --tensor-parallel, which is about the GPUs.
  if (DeviceFor(settings).kind == DeviceKind::kCpu && options_.device.kind != DeviceKind::kCpu) return 1;
  return options_.tensor_parallel;
}

BudgetBytes CpuEngineFactory::ResidentEstimate(const DiscoveredModel& model, const ModelSettings& settings) {
  const bool gpu = DeviceFor(settings).kind != DeviceKind::kCpu;
  const int tp = IsEmbeddingModel(model, settings) ? 1 : TensorParallelFor(settings);
  uint64_t bytes = model.estimated_bytes;
  if (gpu) {
    auto w = GpuWeightBytes(model);
    if (w.ok()) bytes = static_cast<uint64_t>(static_cast<double>(*w) * 1.05);
  }
  auto shape = ReadModelShape(model);
  uint64_t workspace = 0;  // each rank's whole: a rank's activations keep the full hidden width
  if (shape.ok() && IsEmbeddingModel(model, settings)) {
    bytes += EmbeddingRuntimeBytes(*shape);
  } else if (shape.ok()) {
    const EngineOptions o = EngineOptionsFor(settings);
    bytes += KvPoolBytes(*shape, o);
    workspace = WorkspaceBytes(*shape, o);
  }
  BudgetBytes b{};
  if (gpu && tp > 1) {
    // Split: each of tp GPUs (priced from GPU 0; the pool places the run) holds a share of the weights and KV,
    // a workspace and the collective's buffer (the pool admits it only where
    // all of them have room).
    const uint64_t per_rank = (bytes + tp - 1) / tp + workspace + (uint64_t{64} << 20);
    for (int r = 0; r < tp && r < kMaxGpus; ++r) b[BudgetIndex(GpuBudget(r))] = per_rank;
    return b;
  }
  bytes += workspace;
  b[BudgetIndex(gpu ? Budget::kDevice : Budget::kHost)] = bytes;
  return b;
}

namespace {

// The workspace ResidentEstimate priced for a generative model (0 where it
// could not read the shape, and priced none).
uint64_t PricedWorkspace(const DiscoveredModel& entry, const EngineOptions& o) {
  auto shape = ReadModelShape(entry);
  return shape.ok() ? WorkspaceBytes(*shape, o) : 0;
}

}  // namespace

Result<std::unique_ptr<LoadedEngine>> CpuEngineFactory::Load(const DiscoveredModel& entry,
                                                            const ModelSettings& settings,
                                                            const std::atomic<bool>& abort,
                                                            std::shared_ptr<KvBudget> kv_budget,
                                                            int cuda_device) {
  const auto t0 = std::chrono::steady_clock::now();
  auto aborted = [&] { return abort.load() ? Status::ResourceExhausted("load aborted") : Status::OK(); };
  auto m = std::make_shared<ServedModel>();
  m->entry = entry;
  DeviceSpec device = DeviceFor(settings);
  if (device.kind == DeviceKind::kCuda && cuda_device >= 0) device.index = cuda_device;
  const bool embedding = IsEmbeddingModel(entry, settings);
  const int tp = embedding ? 1 : TensorParallelFor(settings);
  auto backends = MakeBackends(device, tp, options_.precision, options_.threads);
  if (!backends.ok()) return backends.status().WithContext("loading model '" + entry.id + "'");
  std::vector<Backend*> ranks;
  for (auto& b : *backends) ranks.push_back(b.get());
  m->backend = std::move((*backends)[0]);
  for (size_t r = 1; r < backends->size(); ++r) m->ranks.push_back(std::move((*backends)[r]));
  if (embedding) return LoadEmbeddingEngine(std::move(m), settings, abort);
  auto model = Model::Load(entry.path, std::span<Backend* const>(ranks));
  if (!model.ok()) return model.status().WithContext("loading model '" + entry.id + "'");
  m->model = std::move(*model);
  RETURN_IF_ERROR(aborted());
  auto tok = LoadModelTokenizer(entry.path);
  if (!tok.ok()) return tok.status().WithContext("loading the tokenizer of '" + entry.id + "'");
  m->tokenizer = std::move(*tok);
  auto templates = LoadModelChatTemplatesAt(entry.path, *m->tokenizer);
  if (templates.ok()) {
    m->bos_token = templates->bos_token;
    m->eos_token = templates->eos_token;
    if (!templates->default_template.empty()) {
      auto parsed = ChatTemplate::Parse(templates->default_template);
      if (parsed.ok()) {
        m->chat_template = std::move(*parsed);
        m->output_format = DetectOutputFormat(m->chat_template->source(), m->model->config().model_type);
      } else {
        m->chat_template_error = "its chat template does not parse: " + parsed.status().message();
        LOG_WARN("models: " << entry.id << ": chat template does not parse (" << parsed.status().message()
                            << "); chat routes will refuse it");
      }
    }
  } else {
    m->chat_template_error = "its chat template cannot be read: " + templates.status().message();
    LOG_WARN("models: " << entry.id << ": no chat template (" << templates.status().message() << ")");
  }
  if (!entry.gguf()) {
    if (auto gen = LoadModelGenerationConfig(entry.path); gen.ok()) m->generation = *gen;
  }
  RETURN_IF_ERROR(aborted());
  EngineOptions eo = EngineOptionsFor(settings);
  eo.model_id = entry.id;
  eo.kv_budget = std::move(kv_budget);
  eo.sample_pool = options_.threads;  // idle between forward passes (a GPU model's, always)
  eo.kv_dtype = options_.kv_dtype.value_or(m->model->Native16BitType());
  if (eo.block_store && entry.random()) {
    // Generated weights have no files to hash: their spec fixes every byte.
    auto r = OpenRandomModel(entry.path, nullptr);
    if (r.ok()) eo.weights_identity = WeightsIdentityHandle::Ready(r->identity);
  } else if (eo.block_store && options_.hasher) {
    eo.weights_identity = options_.hasher->Identify(entry.path);
  }
  auto engine = Engine::Create(m->model.get(), m->tokenizer.get(), eo);
  if (!engine.ok()) return engine.status().WithContext("starting the engine of '" + entry.id + "'");
  m->engine = std::move(*engine);
  m->grammars = std::make_unique<grammar::GrammarCache>(m->tokenizer.get(), m->engine->eos_token_ids());
  m->loaded_at = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  if (settings.model_type_override && *settings.model_type_override != m->model->spec().arch) {
    LOG_WARN("models: " << entry.id << ": model_type_override '" << *settings.model_type_override
                        << "' is recorded; the architecture comes from the model's files ('"
                        << m->model->spec().arch << "')");
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  LOG_INFO("models: loaded " << entry.id << " (" << m->model->spec().arch << ", context "
                             << m->engine->context_length() << ", KV " << DTypeName(eo.kv_dtype) << " "
                             << (m->engine->Stats().kv_cache_bytes >> 20) << " MiB, precision "
                             << PrecisionName(m->backend->precision()) << " on "
                             << (m->backend->kind() == DeviceKind::kCpu ? CpuIsaName(ActiveCpuIsa()) : m->backend->name())
                             << ") in " << static_cast<int64_t>(ms) << " ms");
  return std::unique_ptr<LoadedEngine>(
      new CpuLoadedEngine(m, eo.prefill_chunk_tokens, options_.threads->size(), eo.kv_dtype, eo.kv_blocks > 0,
                          PricedWorkspace(entry, eo)));
}

}  // namespace llmhost
