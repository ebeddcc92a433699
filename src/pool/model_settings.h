// Per-model settings, persisted in <home>/model_settings.json:
//
//   {"models": {"mlx-community/Qwen3-8B-4bit": {
//       "alias": "qwen", "pinned": true, "default": false, "ttl_seconds": 600,
//       "model_type_override": "qwen3", "hidden": false,
//       "sampling": {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0,
//                    "repetition_penalty": 1.0, "presence_penalty": 0, "frequency_penalty": 0},
//       "chat_template_kwargs": {"enable_thinking": false},
//       "max_context_window": 32768, "max_tokens": 4096, "device": "cuda:1", "tensor_parallel": 2,
//       "tool_parser": "hermes", "kind": "chat", "instruction": "..."}}}
//
// Every field is optional. Aliases are unique (and differ from other models'
// ids); at most one model is the default. The file is rewritten atomically
// on every change. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

struct SamplingDefaults {
  std::optional<double> temperature, top_p, min_p, repetition_penalty, presence_penalty,
      frequency_penalty;
  std::optional<int64_t> top_k;
  bool operator==(const SamplingDefaults&) const = default;
};

enum class ModelKind { kChat, kEmbedding, kRerank };
// "chat", "embedding", "rerank".
const char* ModelKindName(ModelKind k);

struct ModelSettings {
  std::optional<std::string> alias;
  bool pinned = false;
  bool is_default = false;
  bool hidden = false;  // left out of /v1/models (still served)
  std::optional<int64_t> ttl_seconds;  // idle seconds before unloading; overrides --idle-ttl
  std::optional<std::string> model_type_override;
  SamplingDefaults sampling;
  nlohmann::json chat_template_kwargs = nlohmann::json::object();
  std::optional<int64_t> max_context_window;
  std::optional<int64_t> max_tokens;
  // Where it computes: "cpu", "cuda" (any of the server's GPUs) or "cuda:N";
  // unset: the server's --device. A model too large for every GPU may be
  // served on the CPU this way.
  std::optional<std::string> device;
  // GPUs the model is split over (tensor parallelism, model/tensor_parallel.h):
  // N of the server's GPUs (an aligned run; `device` "cuda:K" names its first);
  // unset: the server's --tensor-parallel (1).
  std::optional<int64_t> tensor_parallel;
  // The tool-call / reasoning markup of the model's output (chat/output_format.h
  // names: hermes, qwen3_coder, ..., none); unset: chosen from its chat template.
  std::optional<std::string> tool_parser;
  // What the model serves: kChat (unset), kEmbedding (/v1/embeddings,
  // /api/embed) or kRerank (/v1/rerank). Encoder directories (BERT, XLM-R)
  // are embedders or rerankers by their files whatever this says.
  ModelKind kind = ModelKind::kChat;
  // An embedder's query prefix ("Instruct: {instruction}\nQuery:"), a
  // reranker's <Instruct> line (model/decoder_embedder.h); unset: none / the
  // reranker's default.
  std::optional<std::string> instruction;

  // The settings a loaded engine was built with: a change needs a reload.
  std::string RuntimeKey() const;
  bool operator==(const ModelSettings&) const = default;
};

// JSON of one model's settings (unset fields left out).
nlohmann::json ModelSettingsToJson(const ModelSettings& s);
// Validates and applies the fields present in `patch` on top of `base`
// (null removes a field). InvalidArgument names the field: "ttl_seconds:
// expected a positive integer".
Result<ModelSettings> ApplyModelSettingsJson(const ModelSettings& base, const nlohmann::json& patch);

class ModelSettingsStore {
 public:
  // `path` "" keeps settings in memory only. A missing file is empty. A file
  // that cannot be read, or entries that do not validate, never fail the
  // open: each problem is logged (problems()), the valid entries load, and
  // the file is renamed to "<path>.bad-<time>" (set_aside_path()) and written
  // anew with what loaded. When even the rename fails, nothing is written to
  // `path` (settings stay in memory).
  static Result<std::unique_ptr<ModelSettingsStore>> Open(const std::string& path);

  ModelSettings Get(const std::string& id) const;  // defaults when unset
  std::map<std::string, ModelSettings> All() const;
  // Replaces / patches one model's settings and persists. InvalidArgument on
  // a bad value, a duplicate alias, or `taken_ids` containing the alias.
  Status Put(const std::string& id, const ModelSettings& s,
             const std::vector<std::string>& taken_ids = {});
  Result<ModelSettings> Patch(const std::string& id, const nlohmann::json& patch,
                              const std::vector<std::string>& taken_ids = {});
  const std::string& path() const { return path_; }
  const std::vector<std::string>& problems() const { return problems_; }
  const std::string& set_aside_path() const { return set_aside_path_; }

 private:
  explicit ModelSettingsStore(std::string path) : path_(std::move(path)) {}
  Status CheckUnique(const std::string& id, const ModelSettings& s,
                     const std::vector<std::string>& taken_ids) const;  // with mu_ held
  Status Save() const;                                                   // with mu_ held

  std::string path_;
  std::vector<std::string> problems_;  // found by Open
  std::string set_aside_path_;
  mutable std::mutex mu_;
  std::map<std::string, ModelSettings> models_;
};

}  // namespace llmhost
