// What the engine pool holds for one loaded model, and the factory that
// loads it. The pool sees a model only through LoadedEngine (sizes, activity,
// stop), so unit tests load fakes with chosen sizes instead of real weights;
// the server reaches the real objects (tokenizer, template, Engine) through
// ServedModel.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "chat/chat_template.h"
#include "chat/output_format.h"
#include "engine/embed_executor.h"
#include "engine/engine.h"
#include "formats/generation_config.h"
#include "grammar/grammar_cache.h"
#include "model/embedding_model.h"
#include "model/model.h"
#include "pool/model_discovery.h"
#include "pool/model_settings.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost {

// Separate memory budgets: host RAM and the memory of each GPU the server
// computes on. A model's bytes count where they live (CPU backend: all
// host). Factories and engines report a GPU model's bytes at kDevice ("its
// GPU"); the pool moves them to the budget of the GPU it placed the model on,
// GpuBudget(n) for the n-th of PoolOptions::gpus.
enum class Budget : int { kHost = 0, kDevice = 1 };
inline constexpr int kMaxGpus = 8;
inline constexpr int kBudgetCount = 1 + kMaxGpus;
using BudgetBytes = std::array<uint64_t, kBudgetCount>;
inline Budget GpuBudget(int gpu) { return static_cast<Budget>(1 + gpu); }
inline int GpuOf(Budget b) { return static_cast<int>(b) - 1; }  // -1: the host
inline size_t BudgetIndex(Budget b) { return static_cast<size_t>(b); }
// `bytes` as a factory reports them (a GPU's at kDevice; a model split over
// GPUs, its ranks' at GpuBudget(0), GpuBudget(1), ...), moved to start at GPU
// `gpu`'s budget.
inline BudgetBytes OnGpu(BudgetBytes bytes, int gpu) {
  if (gpu <= 0) return bytes;
  BudgetBytes out{};
  out[0] = bytes[0];
  for (int g = 0; g + gpu < kMaxGpus; ++g) out[static_cast<size_t>(1 + g + gpu)] = bytes[static_cast<size_t>(1 + g)];
  return out;
}
inline uint64_t TotalBytes(const BudgetBytes& b) {
  uint64_t t = 0;
  for (uint64_t v : b) t += v;
  return t;
}

// Everything a request needs of one model. Immutable after loading, but for
// the Engine and the EmbedExecutor, which are thread-safe. Members are
// destroyed bottom-up: the engine / executor (and their threads) before the
// model they compute with.
//
// A chat model has an `engine`; an embedder or reranker has `embedding` and
// its `embed_executor` instead (no engine, no chat template): routes check
// which before using either.
struct ServedModel {
  DiscoveredModel entry;
  std::unique_ptr<Backend> backend;             // rank 0's when the model is split
  std::vector<std::unique_ptr<Backend>> ranks;  // the other ranks' (tensor parallelism)
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<ChatTemplate> chat_template;  // none: the model has no (usable) template
  std::string chat_template_error;            // why a template it has cannot be used ("" when none)
  std::string bos_token, eos_token;           // as the template sees them
  DetectedOutputFormat output_format;         // its tool-call / think markup, from the template
  GenerationConfig generation;                // defaults when the file is absent
  int64_t loaded_at = 0;                      // unix seconds
  // Compiled output constraints (structured output) over this tokenizer,
  // and its grammar vocabulary; null until the engine runs (thread-safe).
  std::unique_ptr<grammar::GrammarCache> grammars;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<EmbeddingModel> embedding;
  std::unique_ptr<EmbedExecutor> embed_executor;
};

// Model dimensions the prefill guard prices a prompt with.
struct PrefillDims {
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t kv_dtype_bytes = 4;     // the KV cache's element size (f32 on the CPU backend)
  int64_t prefill_chunk = 512;    // tokens per prefill step (0: whole prompt)
  // Attention score rows the kernel holds at once (each as long as the
  // sequence); 0: a kernel that materialises chunk × n_heads rows.
  int64_t attention_scratch_rows = 0;
  // The KV pool is allocated when the engine starts and counted in the
  // model's resident estimate: a prompt's KV then grows the footprint (pages
  // touched) but not the committed bytes.
  bool kv_preallocated = false;
  // The activations workspace the model's admission price holds
  // (WorkspaceBytes; 0: none): against the model's admitted or committed
  // bytes a prompt's activations are charged only past it.
  uint64_t priced_workspace_bytes = 0;
  // Where the KV cache and the activations live (a GPU model's: its memory).
  Budget budget = Budget::kHost;
  bool valid() const { return n_layers > 0 && n_kv_heads > 0 && head_dim > 0; }
};

class LoadedEngine {
 public:
  virtual ~LoadedEngine() = default;
  // The real model (null for test fakes).
  virtual std::shared_ptr<ServedModel> served() const { return nullptr; }
  // Bytes llmhost's own allocators hold for this model, per budget
  // ("device-active bytes"; CPU: the backend's buffers, weights mapped from
  // the file not included).
  virtual BudgetBytes DeviceActiveBytes() const = 0;
  // Requests queued or running in the engine.
  virtual int64_t ActiveRequests() const = 0;
  // Ends every request (abort) and joins the engine's threads. Idempotent.
  // Memory is released when the object is destroyed.
  virtual void Stop() = 0;
  // Releases pooled scratch memory (a reclaim step under pressure).
  virtual void ReleaseCaches() {}
  virtual int64_t context_length() const = 0;
  virtual PrefillDims prefill_dims() const { return {}; }
};

class EngineFactory {
 public:
  virtual ~EngineFactory() = default;
  // The admission size: the resident estimate of the model once loaded
  // (weights × 1.05 plus runtime extras such as the KV pool), per budget.
  virtual BudgetBytes ResidentEstimate(const DiscoveredModel& model, const ModelSettings& settings) = 0;
  // Loads the model. `abort` may be set while it runs (the enforcer under
  // pressure): a factory may stop early; the pool checks it afterwards too.
  // `kv_budget`: where the engine claims the memory its KV cache grows into
  // beyond what the resident estimate priced (engine/kv_budget.h).
  // `cuda_device`: the GPU (CUDA's number) the pool placed a model priced in
  // GPU memory on; -1 for a model priced in host memory.
  virtual Result<std::unique_ptr<LoadedEngine>> Load(const DiscoveredModel& model,
                                                     const ModelSettings& settings,
                                                     const std::atomic<bool>& abort,
                                                     std::shared_ptr<KvBudget> kv_budget, int cuda_device) = 0;
};

}  // namespace llmhost
