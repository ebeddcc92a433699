#include "pool/embedding_loader.h"

#include <algorithm>
#include <chrono>

#include "model/decoder_embedder.h"
#include "model/encoder_model.h"
#include "model/random_model.h"
#include "util/log.h"

namespace llmhost {

namespace {

bool IsEncoderModel(const DiscoveredModel& model) {
  return !model.gguf() && !model.random() && IsEncoderModelDir(model.path);
}

class EmbeddingLoadedEngine final : public LoadedEngine {
 public:
  explicit EmbeddingLoadedEngine(std::shared_ptr<ServedModel> m) : m_(std::move(m)) {}
  std::shared_ptr<ServedModel> served() const override { return m_; }
  BudgetBytes DeviceActiveBytes() const override {
    BudgetBytes out{};
    out[BudgetIndex(m_->backend->kind() == DeviceKind::kCpu ? Budget::kHost : Budget::kDevice)] =
        m_->backend->memory_stats().bytes_in_use;
    return out;
  }
  int64_t ActiveRequests() const override { return m_->embed_executor->active_jobs(); }
  void Stop() override { m_->embed_executor->Stop(); }
  int64_t context_length() const override { return m_->embedding->max_tokens(); }

 private:
  std::shared_ptr<ServedModel> m_;
};

// The executor and the log line every embedding model's load ends with.
Result<std::unique_ptr<LoadedEngine>> Finish(std::shared_ptr<ServedModel> m,
                                             std::chrono::steady_clock::time_point t0) {
  const std::string& id = m->entry.id;
  EmbedExecutorOptions eo;
  eo.max_batch_tokens = kEmbedBatchTokens;
  if (!IsEncoderModel(m->entry)) eo.token_granularity = kDecoderEmbedderKvBlock;
  m->embed_executor = std::make_unique<EmbedExecutor>(m->embedding.get(), eo);
  m->loaded_at = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  LOG_INFO("models: loaded " << id << " as "
                             << (m->embedding->kind() == EmbeddingKind::kReranker ? "a reranker" : "an embedder")
                             << " (dimensions " << m->embedding->dim() << ", max tokens " << m->embedding->max_tokens()
                             << ") in " << static_cast<int64_t>(ms) << " ms");
  return std::unique_ptr<LoadedEngine>(new EmbeddingLoadedEngine(std::move(m)));
}

}  // namespace

bool IsEmbeddingModel(const DiscoveredModel& model, const ModelSettings& settings) {
  // An encoder (BERT, XLM-R) cannot chat whatever its settings say.
  return settings.kind != ModelKind::kChat || IsEncoderModel(model);
}

ModelKind ServesKind(const DiscoveredModel& model, const ModelSettings& settings) {
  if (model.encoder) return model.classifier ? ModelKind::kRerank : ModelKind::kEmbedding;
  return settings.kind;
}

uint64_t EmbeddingRuntimeBytes(const ModelShape& s) {
  const uint64_t kv = 2 * static_cast<uint64_t>(s.n_layers * s.n_kv_heads * s.head_dim) * 2 * kEmbedBatchTokens;
  EngineOptions step;
  step.prefill_chunk_tokens = kEmbedStepTokens;
  step.max_concurrent_requests = 64;  // the step's last-token rows, bucketed
  return kv + WorkspaceBytes(s, step);
}

Result<std::unique_ptr<LoadedEngine>> LoadEmbeddingEngine(std::shared_ptr<ServedModel> m,
                                                          const ModelSettings& settings,
                                                          const std::atomic<bool>& abort) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string& id = m->entry.id;
  if (IsEncoderModel(m->entry)) {
    // Its kind (embedder or reranker) is the files': a sequence classifier scores pairs.
    auto encoder = LoadEncoderModel(m->entry.path, m->backend.get());
    if (!encoder.ok()) return encoder.status().WithContext("loading model '" + id + "'");
    m->embedding = std::move(*encoder);
    auto tok = LoadModelTokenizer(m->entry.path);
    if (!tok.ok()) return tok.status().WithContext("loading the tokenizer of '" + id + "'");
    m->tokenizer = std::move(*tok);
    return Finish(std::move(m), t0);
  }
  auto model = Model::Load(m->entry.path, m->backend.get());
  if (!model.ok()) return model.status().WithContext("loading model '" + id + "'");
  m->model = std::move(*model);
  if (abort.load()) return Status::ResourceExhausted("load aborted");
  auto tok = LoadModelTokenizer(m->entry.path);
  if (!tok.ok()) return tok.status().WithContext("loading the tokenizer of '" + id + "'");
  m->tokenizer = std::move(*tok);
  DecoderEmbedderOptions o;
  o.kind = settings.kind == ModelKind::kRerank ? EmbeddingKind::kReranker : EmbeddingKind::kEmbedder;
  o.instruction = settings.instruction.value_or("");
  // One input alone may not need more KV than the pool priced (a batch's).
  o.max_tokens = std::min<int64_t>(settings.max_context_window.value_or(kEmbedBatchTokens), kEmbedBatchTokens);
  o.step_tokens = kEmbedStepTokens;
  auto embedder = DecoderEmbedder::Create(m->model.get(), m->tokenizer.get(), o);
  if (!embedder.ok()) {
    return embedder.status().WithContext("model '" + id + "' as a " + ModelKindName(settings.kind) + " model");
  }
  m->embedding = std::move(*embedder);
  return Finish(std::move(m), t0);
}

}  // namespace llmhost
