#include "pool/model_registry.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <set>

#include "formats/gguf.h"
#include "util/file.h"
#include "util/log.h"

namespace llmhost {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxDiscoveryDepth = 4;

bool Hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint64_t WeightBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (EndsWith(name, ".safetensors") || EndsWith(name, ".gguf")) {
      std::error_code size_ec;
      const auto n = e.file_size(size_ec);
      if (!size_ec) total += n;
    }
  }
  return total;
}

void Walk(const fs::path& root, const fs::path& dir, int depth, std::vector<ModelEntry>* out) {
  std::error_code ec;
  std::vector<fs::directory_entry> children;
  for (const auto& e : fs::directory_iterator(dir, ec)) children.push_back(e);
  std::sort(children.begin(), children.end(),
            [](const auto& a, const auto& b) { return a.path() < b.path(); });
  for (const auto& e : children) {
    if (Hidden(e.path())) continue;
    std::error_code type_ec;
    const std::string rel = fs::relative(e.path(), root, type_ec).generic_string();
    if (e.is_directory(type_ec)) {
      if (fs::exists(e.path() / "config.json", type_ec)) {
        if (fs::exists(e.path() / "adapter_config.json", type_ec)) continue;  // a LoRA adapter
        out->push_back({rel, e.path().string(), false, WeightBytes(e.path())});
      } else if (depth < kMaxDiscoveryDepth) {
        Walk(root, e.path(), depth + 1, out);
      }
    } else if (e.is_regular_file(type_ec) && EndsWith(rel, ".gguf")) {
      std::error_code size_ec;
      const uint64_t size = e.file_size(size_ec);
      out->push_back({rel.substr(0, rel.size() - 5), e.path().string(), true, size_ec ? 0 : size});
    }
  }
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Chat template and bos/eos strings: the model directory's files, or the
// GGUF metadata (tokenizer.chat_template, token ids of bos/eos).
Result<ModelChatTemplates> TemplatesFor(const ModelEntry& entry, const Tokenizer& tok) {
  if (!entry.gguf) return LoadModelChatTemplates(entry.path);
  ModelChatTemplates t;
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(entry.path));
  if (f->Has("tokenizer.chat_template")) {
    ASSIGN_OR_RETURN(t.default_template, f->GetString("tokenizer.chat_template"));
  }
  auto token = [&](const char* key) -> std::string {
    if (!f->Has(key)) return "";
    auto id = f->GetInt(key);
    if (!id.ok()) return "";
    return tok.IdToToken(static_cast<TokenId>(*id)).value_or("");
  };
  t.bos_token = token("tokenizer.ggml.bos_token_id");
  t.eos_token = token("tokenizer.ggml.eos_token_id");
  return t;
}

}  // namespace

std::vector<ModelEntry> ModelRegistry::Discover(const std::vector<std::string>& model_dirs) {
  std::vector<ModelEntry> all;
  std::set<std::string> seen;
  for (const std::string& dir : model_dirs) {
    if (!IsDirectory(dir)) {
      LOG_WARN("models: " << dir << " is not a directory: skipped");
      continue;
    }
    std::vector<ModelEntry> found;
    const fs::path root(dir);
    if (FileExists(JoinPath(dir, "config.json"))) {
      std::string name = fs::absolute(root).lexically_normal().filename().string();
      if (name.empty()) name = fs::absolute(root).lexically_normal().parent_path().filename().string();
      found.push_back({name, dir, false, WeightBytes(root)});
    } else {
      Walk(root, root, 0, &found);
    }
    for (ModelEntry& e : found) {
      if (!seen.insert(e.id).second) {
        LOG_WARN("models: duplicate id '" << e.id << "' at " << e.path << ": the first one is kept");
        continue;
      }
      all.push_back(std::move(e));
    }
  }
  std::sort(all.begin(), all.end(), [](const ModelEntry& a, const ModelEntry& b) { return a.id < b.id; });
  return all;
}

ModelRegistry::ModelRegistry(ModelRegistryOptions options) : options_(std::move(options)) {}

ModelRegistry::~ModelRegistry() { Shutdown(); }

std::unique_ptr<ModelRegistry> ModelRegistry::Create(ModelRegistryOptions options) {
  std::unique_ptr<ModelRegistry> r(new ModelRegistry(std::move(options)));
  r->entries_ = Discover(r->options_.model_dirs);
  return r;
}

std::vector<ModelEntry> ModelRegistry::List() const { return entries_; }

std::optional<ModelEntry> ModelRegistry::Resolve(const std::string& name) const {
  for (const ModelEntry& e : entries_) {
    if (e.id == name) return e;
  }
  const std::string lower = Lower(name);
  std::optional<ModelEntry> match;
  for (const ModelEntry& e : entries_) {
    if (Lower(e.id) == lower) {
      if (match) return std::nullopt;  // ambiguous
      match = e;
    }
  }
  return match;
}

Result<std::shared_ptr<LoadedModel>> ModelRegistry::Get(const std::string& name) {
  std::optional<ModelEntry> entry = Resolve(name);
  if (!entry) {
    std::string available;
    for (const ModelEntry& e : entries_) available += (available.empty() ? "" : ", ") + e.id;
    return Status::NotFound("The model '" + name + "' does not exist. Available models: " +
                            (available.empty() ? "(none: check --model-dir)" : available));
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (shut_down_) return Status::Internal("the server is shutting down");
    Slot& slot = slots_[entry->id];
    if (slot.model) return slot.model;
    if (!slot.loading) break;
    loaded_cv_.wait(lock);
  }
  slots_[entry->id].loading = true;
  lock.unlock();
  Result<std::shared_ptr<LoadedModel>> loaded = Load(*entry);
  lock.lock();
  Slot& slot = slots_[entry->id];
  slot.loading = false;
  if (loaded.ok()) {
    if (shut_down_) {
      lock.unlock();
      loaded_cv_.notify_all();
      return Status::Internal("the server is shutting down");
    }
    slot.model = *loaded;
  }
  lock.unlock();
  loaded_cv_.notify_all();
  return loaded;
}

Result<std::shared_ptr<LoadedModel>> ModelRegistry::Load(const ModelEntry& entry) {
  const auto t0 = std::chrono::steady_clock::now();
  auto m = std::make_shared<LoadedModel>();
  m->entry = entry;
  m->backend = std::make_unique<CpuBackend>(&ThreadPool::Default(), options_.precision);
  auto model = Model::Load(entry.path, m->backend.get());
  if (!model.ok()) return model.status().WithContext("loading model '" + entry.id + "'");
  m->model = std::move(*model);
  auto tok = Tokenizer::FromPath(entry.path);
  if (!tok.ok()) return tok.status().WithContext("loading the tokenizer of '" + entry.id + "'");
  m->tokenizer = std::move(*tok);
  auto templates = TemplatesFor(entry, *m->tokenizer);
  if (templates.ok()) {
    m->bos_token = templates->bos_token;
    m->eos_token = templates->eos_token;
    if (!templates->default_template.empty()) {
      auto parsed = ChatTemplate::Parse(templates->default_template);
      if (parsed.ok()) {
        m->chat_template = std::move(*parsed);
      } else {
        LOG_WARN("models: " << entry.id << ": chat template does not parse ("
                            << parsed.status().message() << "); chat routes will refuse it");
      }
    }
  } else {
    LOG_WARN("models: " << entry.id << ": no chat template (" << templates.status().message() << ")");
  }
  if (!entry.gguf) {
    if (auto gen = LoadGenerationConfig(entry.path); gen.ok()) m->generation = *gen;
  }
  auto engine = Engine::Create(m->model.get(), m->tokenizer.get(), options_.engine);
  if (!engine.ok()) return engine.status().WithContext("starting the engine of '" + entry.id + "'");
  m->engine = std::move(*engine);
  m->loaded_at = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  LOG_INFO("models: loaded " << entry.id << " (" << m->model->spec().arch << ", context "
                             << m->engine->context_length() << ") in " << static_cast<int64_t>(ms)
                             << " ms");
  return m;
}

std::vector<std::shared_ptr<LoadedModel>> ModelRegistry::Loaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<LoadedModel>> out;
  for (const auto& [id, slot] : slots_) {
    if (slot.model) out.push_back(slot.model);
  }
  return out;
}

void ModelRegistry::Shutdown() {
  std::map<std::string, Slot> slots;
  {
    std::unique_lock<std::mutex> lock(mu_);
    shut_down_ = true;
    // A load in progress finishes first (it cannot be interrupted).
    loaded_cv_.wait(lock, [&] {
      return std::none_of(slots_.begin(), slots_.end(), [](const auto& s) { return s.second.loading; });
    });
    slots.swap(slots_);
  }
  // Stop every engine here, on the caller's thread (never on an executor
  // thread dropping the last reference): what still runs ends with kAbort.
  for (auto& [id, slot] : slots) {
    if (slot.model) slot.model->engine.reset();
  }
  slots.clear();
}

}  // namespace llmhost
