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
#include "engine/engine.h"
#include "formats/generation_config.h"
#include "model/model.h"
#include "pool/model_discovery.h"
#include "pool/model_settings.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost {

// Separate memory budgets: host RAM and the GPU's memory. A model's bytes
// count where they live (CPU backend: all host).
enum class Budget { kHost = 0, kDevice = 1 };
inline constexpr int kBudgetCount = 2;
using BudgetBytes = std::array<uint64_t, kBudgetCount>;
inline const char* BudgetName(Budget b) { return b == Budget::kHost ? "host" : "device"; }

// Everything a request needs of one model. Immutable after loading, but for
// the Engine, which is thread-safe. Members are destroyed bottom-up: the
// engine (and its executor thread) before the model it computes with.
struct ServedModel {
  DiscoveredModel entry;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<ChatTemplate> chat_template;  // none: the model has no (usable) template
  std::string chat_template_error;            // why a template it has cannot be used ("" when none)
  std::string bos_token, eos_token;           // as the template sees them
  GenerationConfig generation;                // defaults when the file is absent
  int64_t loaded_at = 0;                      // unix seconds
  std::unique_ptr<Engine> engine;
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
  virtual Result<std::unique_ptr<LoadedEngine>> Load(const DiscoveredModel& model,
                                                     const ModelSettings& settings,
                                                     const std::atomic<bool>& abort,
                                                     std::shared_ptr<KvBudget> kv_budget) = 0;
};

}  // namespace llmhost
