// ModelRegistry: the models under the --model-dir directories, each loaded on
// its first request (Model + Tokenizer + chat template + Engine) and kept
// loaded. The minimal start of the engine pool: issue 5 adds memory
// admission, eviction, pinning and TTLs on top.
//
// Discovery (at Create): under each directory, recursively (hidden entries
// skipped), a directory holding config.json is a model whose id is its path
// relative to the root ("Qwen3-0.6B", "org/Model"), and is not searched
// further; a *.gguf file is a model whose id is its relative path without
// ".gguf". A root that is itself a model directory gets its base name. On a
// duplicate id the first directory wins.
//
// Thread safety: all methods may be called from any thread. A model is
// loaded once; concurrent first requests wait for the same load.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "chat/chat_template.h"
#include "engine/engine.h"
#include "formats/generation_config.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost {

struct ModelEntry {
  std::string id;
  std::string path;  // model directory or .gguf file
  bool gguf = false;
  uint64_t size_bytes = 0;  // weight files
};

// Everything a request needs of one model. Immutable after loading, but for
// the Engine, which is thread-safe. Members are destroyed bottom-up: the
// engine (and its executor thread) before the model it computes with.
struct LoadedModel {
  ModelEntry entry;
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<ChatTemplate> chat_template;  // none: the model has no template
  std::string bos_token, eos_token;           // as the template sees them
  GenerationConfig generation;                // defaults when the file is absent
  int64_t loaded_at = 0;                      // unix seconds
  std::unique_ptr<Engine> engine;
};

struct ModelRegistryOptions {
  std::vector<std::string> model_dirs;
  EngineOptions engine;
  Precision precision = Precision::kFast;
};

class ModelRegistry {
 public:
  // Discovers the models; missing directories are skipped with a warning.
  static std::unique_ptr<ModelRegistry> Create(ModelRegistryOptions options);
  ~ModelRegistry();

  std::vector<ModelEntry> List() const;  // sorted by id
  // Resolves `name` (the exact id, else a unique case-insensitive match) and
  // loads the model on first use. NotFound names the available ids.
  Result<std::shared_ptr<LoadedModel>> Get(const std::string& name);
  // Already-loaded models (no loading).
  std::vector<std::shared_ptr<LoadedModel>> Loaded() const;
  // Stops every engine (what still runs ends with kAbort) and releases the
  // models; Get() fails afterwards. Waits for a load in progress.
  // REQUIRES: no other thread uses a LoadedModel's engine any more (the
  // HTTP server is gone: its handlers and connections).
  void Shutdown();

  // Discovery alone (for tests and `serve` start-up messages).
  static std::vector<ModelEntry> Discover(const std::vector<std::string>& model_dirs);

 private:
  explicit ModelRegistry(ModelRegistryOptions options);
  Result<std::shared_ptr<LoadedModel>> Load(const ModelEntry& entry);
  std::optional<ModelEntry> Resolve(const std::string& name) const;

  struct Slot {
    bool loading = false;
    std::shared_ptr<LoadedModel> model;
  };

  ModelRegistryOptions options_;
  std::vector<ModelEntry> entries_;
  mutable std::mutex mu_;
  std::condition_variable loaded_cv_;
  std::map<std::string, Slot> slots_;  // by id; guarded by mu_
  bool shut_down_ = false;
};

}  // namespace llmhost
