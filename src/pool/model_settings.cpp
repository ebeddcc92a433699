#include "pool/model_settings.h"

#include <cmath>
#include <ctime>
#include <filesystem>

#include "backend/device.h"
#include "chat/output_format.h"
#include "chat/template_kwargs.h"
#include "util/file.h"
#include "util/json.h"
#include "util/log.h"

namespace llmhost {

namespace {

using Json = nlohmann::json;

constexpr size_t kMaxAliasBytes = 256;
constexpr int64_t kMaxTtlSeconds = int64_t{10} * 365 * 24 * 3600;

Status Bad(const std::string& field, const std::string& what) {
  return Status::InvalidArgument(field + ": " + what);
}

Result<std::optional<double>> Number(const Json& v, const std::string& field, double lo, double hi) {
  if (v.is_null()) return std::optional<double>();
  if (!v.is_number()) return Bad(field, "expected a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    return Bad(field, "expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return std::optional<double>(x);
}

Result<std::optional<int64_t>> Integer(const Json& v, const std::string& field, int64_t lo, int64_t hi) {
  if (v.is_null()) return std::optional<int64_t>();
  if (!v.is_number_integer() && !v.is_number_unsigned()) return Bad(field, "expected an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return Bad(field, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    return Bad(field, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return std::optional<int64_t>(x);
}

Result<bool> Bool(const Json& v, const std::string& field) {
  if (v.is_null()) return false;
  if (!v.is_boolean()) return Bad(field, "expected true or false");
  return v.get<bool>();
}

Result<std::optional<std::string>> Text(const Json& v, const std::string& field) {
  if (v.is_null()) return std::optional<std::string>();
  if (!v.is_string()) return Bad(field, "expected a string");
  std::string s = v.get<std::string>();
  if (s.empty()) return std::optional<std::string>();
  if (s.size() > kMaxAliasBytes) return Bad(field, "longer than 256 bytes");
  return std::optional<std::string>(std::move(s));
}

// An alias is a name clients put in "model": printable, no path separators
// (ids with '/' are org/Model paths), not blank.
Result<std::optional<std::string>> Alias(const Json& v, const std::string& field) {
  if (v.is_null()) return std::optional<std::string>();
  if (!v.is_string()) return Bad(field, "expected a string (null removes the alias)");
  const std::string& s = v.get_ref<const std::string&>();
  if (s.find_first_not_of(" \t") == std::string::npos) {
    return Bad(field, "must not be blank (null removes the alias)");
  }
  if (s.size() > kMaxAliasBytes) return Bad(field, "longer than 256 bytes");
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return Bad(field, "must not contain control characters");
    if (c == '/' || c == '\\') return Bad(field, "must not contain '/' or '\\' (ids with '/' name org/Model folders)");
  }
  if (s.front() == ' ' || s.back() == ' ') return Bad(field, "must not start or end with a space");
  return std::optional<std::string>(s);
}

Status ApplySampling(const Json& j, SamplingDefaults* s) {
  if (j.is_null()) {
    *s = SamplingDefaults();
    return Status::OK();
  }
  if (!j.is_object()) return Bad("sampling", "expected an object");
  for (const auto& [key, v] : j.items()) {
    const std::string f = "sampling." + key;
    if (key == "temperature") {
      ASSIGN_OR_RETURN(s->temperature, Number(v, f, 0, 100));
    } else if (key == "top_p") {
      ASSIGN_OR_RETURN(s->top_p, Number(v, f, 1e-9, 1));
    } else if (key == "min_p") {
      ASSIGN_OR_RETURN(s->min_p, Number(v, f, 0, 1));
    } else if (key == "repetition_penalty") {
      ASSIGN_OR_RETURN(s->repetition_penalty, Number(v, f, 1e-9, 100));
    } else if (key == "presence_penalty") {
      ASSIGN_OR_RETURN(s->presence_penalty, Number(v, f, -2, 2));
    } else if (key == "frequency_penalty") {
      ASSIGN_OR_RETURN(s->frequency_penalty, Number(v, f, -2, 2));
    } else if (key == "top_k") {
      ASSIGN_OR_RETURN(s->top_k, Integer(v, f, 0, 1 << 20));
    } else {
      return Bad(f, "unknown sampling field");
    }
  }
  return Status::OK();
}

}  // namespace

const char* ModelKindName(ModelKind k) {
  switch (k) {
    case ModelKind::kChat: return "chat";
    case ModelKind::kEmbedding: return "embedding";
    case ModelKind::kRerank: return "rerank";
  }
  return "chat";
}

std::string ModelSettings::RuntimeKey() const {
  return (model_type_override ? *model_type_override : "") + "|" +
         (max_context_window ? std::to_string(*max_context_window) : "") + "|" + (device ? *device : "") + "|" +
         (tensor_parallel ? std::to_string(*tensor_parallel) : "") + "|" +
         ModelKindName(kind) + "|" + (instruction ? *instruction : "");
}

Json ModelSettingsToJson(const ModelSettings& s) {
  Json j = Json::object();
  if (s.alias) j["alias"] = *s.alias;
  if (s.pinned) j["pinned"] = true;
  if (s.is_default) j["default"] = true;
  if (s.hidden) j["hidden"] = true;
  if (s.ttl_seconds) j["ttl_seconds"] = *s.ttl_seconds;
  if (s.model_type_override) j["model_type_override"] = *s.model_type_override;
  Json samp = Json::object();
  auto put = [&](const char* k, const auto& v) {
    if (v) samp[k] = *v;
  };
  put("temperature", s.sampling.temperature);
  put("top_p", s.sampling.top_p);
  put("top_k", s.sampling.top_k);
  put("min_p", s.sampling.min_p);
  put("repetition_penalty", s.sampling.repetition_penalty);
  put("presence_penalty", s.sampling.presence_penalty);
  put("frequency_penalty", s.sampling.frequency_penalty);
  if (!samp.empty()) j["sampling"] = std::move(samp);
  if (!s.chat_template_kwargs.empty()) j["chat_template_kwargs"] = s.chat_template_kwargs;
  if (s.max_context_window) j["max_context_window"] = *s.max_context_window;
  if (s.max_tokens) j["max_tokens"] = *s.max_tokens;
  if (s.device) j["device"] = *s.device;
  if (s.tensor_parallel) j["tensor_parallel"] = *s.tensor_parallel;
  if (s.tool_parser) j["tool_parser"] = *s.tool_parser;
  if (s.kind != ModelKind::kChat) j["kind"] = ModelKindName(s.kind);
  if (s.instruction) j["instruction"] = *s.instruction;
  return j;
}

Result<ModelSettings> ApplyModelSettingsJson(const ModelSettings& base, const Json& patch) {
  if (!patch.is_object()) return Status::InvalidArgument("model settings: expected a JSON object");
  ModelSettings s = base;
  for (const auto& [key, v] : patch.items()) {
    if (key == "alias" || key == "model_alias") {
      ASSIGN_OR_RETURN(s.alias, Alias(v, key));
    } else if (key == "pinned" || key == "is_pinned") {
      ASSIGN_OR_RETURN(s.pinned, Bool(v, key));
    } else if (key == "default" || key == "is_default") {
      ASSIGN_OR_RETURN(s.is_default, Bool(v, key));
    } else if (key == "hidden" || key == "is_hidden") {
      ASSIGN_OR_RETURN(s.hidden, Bool(v, key));
    } else if (key == "ttl_seconds") {
      ASSIGN_OR_RETURN(s.ttl_seconds, Integer(v, key, 1, kMaxTtlSeconds));
    } else if (key == "model_type_override" || key == "type") {
      ASSIGN_OR_RETURN(s.model_type_override, Text(v, key));
    } else if (key == "sampling") {
      RETURN_IF_ERROR(ApplySampling(v, &s.sampling));
    } else if (key == "chat_template_kwargs") {
      if (v.is_null()) {
        s.chat_template_kwargs = Json::object();
      } else {
        RETURN_IF_ERROR(CheckTemplateKwargs(v, key));
        s.chat_template_kwargs = v;
      }
    } else if (key == "max_context_window" || key == "max_context") {
      ASSIGN_OR_RETURN(s.max_context_window, Integer(v, key, 1, int64_t{1} << 30));
    } else if (key == "max_tokens") {
      ASSIGN_OR_RETURN(s.max_tokens, Integer(v, key, 1, int64_t{1} << 30));
    } else if (key == "device") {
      ASSIGN_OR_RETURN(s.device, Text(v, key));
      if (s.device && *s.device == "auto") {
        s.device.reset();  // the server's choice: the same as no setting
      } else if (s.device && !ParseDevice(*s.device).ok()) {
        return Bad(key, "expected cpu, cuda or cuda:N (or auto: the server's device)");
      }
    } else if (key == "tensor_parallel") {
      ASSIGN_OR_RETURN(s.tensor_parallel, Integer(v, key, 1, 64));
    } else if (key == "tool_parser") {
      ASSIGN_OR_RETURN(s.tool_parser, Text(v, key));
      if (s.tool_parser && *s.tool_parser == "auto") {
        s.tool_parser.reset();  // chosen from the chat template: the same as no setting
      } else if (s.tool_parser) {
        Result<OutputFormat> f = ParseOutputFormat(*s.tool_parser);
        if (!f.ok()) return Bad(key, f.status().message() + " (or auto: chosen from the chat template)");
      }
    } else if (key == "kind") {
      ASSIGN_OR_RETURN(std::optional<std::string> kind, Text(v, key));
      if (!kind || *kind == "chat") {
        s.kind = ModelKind::kChat;
      } else if (*kind == "embedding") {
        s.kind = ModelKind::kEmbedding;
      } else if (*kind == "rerank") {
        s.kind = ModelKind::kRerank;
      } else {
        return Bad(key, "expected chat, embedding or rerank");
      }
    } else if (key == "instruction") {
      ASSIGN_OR_RETURN(s.instruction, Text(v, key));
    } else {
      return Bad(key, "unknown model setting");
    }
  }
  return s;
}

namespace {

// "<path>.bad-20261201-153000": beside the original, so the user finds it.
std::string SetAsideName(const std::string& path) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  std::string name = path + ".bad-" + stamp;
  for (int i = 1; FileExists(name); ++i) name = path + ".bad-" + stamp + "-" + std::to_string(i);
  return name;
}

}  // namespace

Result<std::unique_ptr<ModelSettingsStore>> ModelSettingsStore::Open(const std::string& path) {
  std::unique_ptr<ModelSettingsStore> store(new ModelSettingsStore(path));
  if (path.empty() || !FileExists(path)) return store;
  // Entries that do not validate are reported and left out; the rest load.
  Result<Json> j = ReadJsonFile(path, kJsonSettingsMaxBytes);
  if (!j.ok()) {
    store->problems_.push_back(j.status().message());
  } else if (!j->is_object()) {
    store->problems_.push_back(path + ": not a JSON object");
  } else if (auto models = j->find("models"); models != j->end() && !models->is_null()) {
    if (!models->is_object()) {
      store->problems_.push_back(path + ": models: expected an object");
    } else {
      for (const auto& [id, v] : models->items()) {
        auto s = ApplyModelSettingsJson(ModelSettings(), v);
        Status st = s.ok() ? store->CheckUnique(id, *s, {}) : s.status();
        if (!st.ok()) {
          store->problems_.push_back(path + ": models." + id + ": " + st.message() + " (left out)");
          continue;
        }
        store->models_[id] = std::move(*s);
      }
    }
  }
  if (store->problems_.empty()) return store;
  // Never fatal, and nothing is lost: the file is kept under another name
  // and what did load is written back in its place.
  for (const std::string& p : store->problems_) LOG_ERROR("settings: " << p);
  const std::string aside = SetAsideName(path);
  std::error_code ec;
  std::filesystem::rename(path, aside, ec);
  if (ec) {
    LOG_ERROR("settings: cannot set " << path << " aside (" << ec.message()
                                      << "): per-model settings stay in memory and are not saved");
    store->path_.clear();
    return store;
  }
  store->set_aside_path_ = aside;
  LOG_ERROR("settings: " << path << " was set aside as " << aside << "; " << store->models_.size()
                         << " models' settings loaded from it");
  if (Status st = store->Save(); !st.ok()) LOG_ERROR("settings: " << st.message());
  return store;
}

ModelSettings ModelSettingsStore::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(id);
  return it == models_.end() ? ModelSettings() : it->second;
}

std::map<std::string, ModelSettings> ModelSettingsStore::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_;
}

Status ModelSettingsStore::CheckUnique(const std::string& id, const ModelSettings& s,
                                       const std::vector<std::string>& taken_ids) const {
  for (const auto& [other, o] : models_) {
    if (other == id) continue;
    if (s.alias && o.alias && *s.alias == *o.alias) {
      return Status::InvalidArgument("alias '" + *s.alias + "' is already used by '" + other + "'");
    }
    if (s.is_default && o.is_default) {
      return Status::InvalidArgument("'" + other + "' is already the default model");
    }
  }
  if (s.alias) {
    for (const std::string& t : taken_ids) {
      if (t != id && t == *s.alias) {
        return Status::InvalidArgument("alias '" + *s.alias + "' is the id of another model");
      }
    }
  }
  return Status::OK();
}

Status ModelSettingsStore::Save() const {
  if (path_.empty()) return Status::OK();
  // A --home that does not exist yet is created with the first setting.
  std::error_code ec;
  std::filesystem::create_directories(DirName(path_), ec);
  if (ec) return Status::IOError(DirName(path_) + ": cannot create the directory: " + ec.message());
  Json models = Json::object();
  for (const auto& [id, s] : models_) {
    Json j = ModelSettingsToJson(s);
    if (!j.empty()) models[id] = std::move(j);
  }
  return WriteFileAtomic(path_, Json{{"models", std::move(models)}}.dump(2) + "\n");
}

Status ModelSettingsStore::Put(const std::string& id, const ModelSettings& s,
                               const std::vector<std::string>& taken_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckUnique(id, s, taken_ids));
  const auto old = models_.find(id);
  const std::optional<ModelSettings> previous =
      old == models_.end() ? std::nullopt : std::optional<ModelSettings>(old->second);
  models_[id] = s;
  Status st = Save();
  if (!st.ok()) {  // keep memory and file in agreement
    if (previous) {
      models_[id] = *previous;
    } else {
      models_.erase(id);
    }
    return st.WithContext("saving " + path_);
  }
  return Status::OK();
}

Result<ModelSettings> ModelSettingsStore::Patch(const std::string& id, const Json& patch,
                                                const std::vector<std::string>& taken_ids) {
  ASSIGN_OR_RETURN(ModelSettings s, ApplyModelSettingsJson(Get(id), patch));
  RETURN_IF_ERROR(Put(id, s, taken_ids));
  return s;
}

}  // namespace llmhost
