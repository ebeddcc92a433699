#include "pool/model_discovery.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "formats/gguf_split.h"
#include "formats/hf_config.h"
#include "model/encoder_config.h"
#include "model/random_model.h"
#include "pool/hf_cache_revisions.h"
#include "util/file.h"
#include "util/json.h"
#include "util/log.h"

namespace llmhost {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxWeightSearchDepth = 3;

bool Hidden(const std::string& name) { return !name.empty() && name[0] == '.'; }

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Entries of `dir` in name order (symlinks followed by the callers' checks).
std::vector<fs::directory_entry> Children(const fs::path& dir) {
  std::vector<fs::directory_entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(*it);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
  return out;
}

bool IsDir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

uint64_t SizeOf(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

uint64_t SumFiles(const fs::path& dir, bool (*match)(const std::string&)) {
  uint64_t total = 0;
  for (const auto& e : Children(dir)) {
    const std::string name = e.path().filename().string();
    if (!Hidden(name) && match(name) && IsFile(e.path())) total += SizeOf(e.path());
  }
  return total;
}

uint64_t SumSafetensorsRecursive(const fs::path& dir, int depth) {
  uint64_t total = 0;
  for (const auto& e : Children(dir)) {
    const std::string name = e.path().filename().string();
    if (Hidden(name)) continue;
    if (IsDir(e.path())) {
      if (depth < kMaxWeightSearchDepth) total += SumSafetensorsRecursive(e.path(), depth + 1);
    } else if (EndsWith(name, ".safetensors") && IsFile(e.path())) {
      total += SizeOf(e.path());
    }
  }
  return total;
}

// Quantized checkpoints grow at load (model/quant_repack.h): GPTQ, AWQ and
// packed-int groups' 16-bit scales and zeros become an f32 scale and bias per group
// of at most 128 columns; FP8 block scales become one f32 per row and block.
// Bytes per weight in memory over bytes per weight in the files.
double RepackGrowth(const HfQuantization& q) {
  if (q.method == HfQuantization::Method::kFp8) {
    if (q.block_rows <= 0) return 1.0;
    return (1.0 + 4.0 / q.block_cols) / (1.0 + 4.0 / (static_cast<double>(q.block_rows) * q.block_cols));
  }
  const double code = q.bits / 8.0;
  const int g = q.group_size;
  const double in_memory = g <= 0 || g % 128 == 0 ? 128 : g % 64 == 0 ? 64 : 32;
  // A 16-bit scale and (packed asymmetric schemes, GPTQ, AWQ) a packed zero per group.
  const double zero = q.method == HfQuantization::Method::kPacked && q.symmetric ? 0.0 : code;
  const double in_files = g <= 0 ? 0.0 : (2.0 + zero) / g;  // one group per row: next to nothing
  return (code + 8.0 / in_memory) / (code + in_files);
}

// model_type, max_position_embeddings and the encoder flags of a config.json
// (empty / 0 / false when unreadable); a quantized checkpoint's estimate grown
// to its size in memory.
void ReadConfigInfo(const fs::path& dir, DiscoveredModel* m) {
  const fs::path p = dir / "config.json";
  auto mc = LoadModelConfig(p.string());
  if (mc.ok() && IsEncoderConfig(*mc)) {
    m->encoder = true;
    m->classifier = std::any_of(mc->architectures.begin(), mc->architectures.end(), [](const std::string& a) {
      return a.ends_with("ForSequenceClassification");
    });
  }
  if (mc.ok() && mc->hf_quantization) {
    m->estimated_bytes = static_cast<uint64_t>(static_cast<double>(m->estimated_bytes) * RepackGrowth(*mc->hf_quantization));
  }
  auto parsed = ReadJsonFile(p.string(), kJsonModelFileMaxBytes);
  if (!parsed.ok() || !parsed->is_object()) return;
  const nlohmann::json& j = *parsed;
  auto type = j.find("model_type");
  if (type != j.end() && type->is_string()) m->model_type = type->get<std::string>();
  const nlohmann::json* ctx_holder = &j;
  if (auto tc = j.find("text_config"); tc != j.end() && tc->is_object()) ctx_holder = &*tc;
  auto ctx = ctx_holder->find("max_position_embeddings");
  if (ctx != ctx_holder->end() && ctx->is_number_integer() && ctx->get<int64_t>() > 0) {
    m->context_length = ctx->get<int64_t>();
  }
}

// Parts 2.. of a split GGUF model: listed through part 1.
bool LaterSplitPart(const std::string& name) {
  const std::optional<GgufSplitName> split = ParseGgufSplitName(name);
  return split && split->no > 1;
}

// "m.gguf" → "m"; a split's "m-00001-of-00003.gguf" → "m".
std::string GgufModelName(const std::string& name) {
  const std::optional<GgufSplitName> split = ParseGgufSplitName(name);
  return split && split->count > 1 ? split->prefix : name.substr(0, name.size() - 5);
}

// Bytes of a GGUF model: the file, or every part of a split that is there
// (a missing part fails at load time, naming it).
uint64_t GgufModelBytes(const fs::path& file) {
  const std::optional<GgufSplitName> split = ParseGgufSplitName(file.string());
  if (!split || split->count == 1) return SizeOf(file);
  uint64_t total = 0;
  for (int no = 1; no <= split->count; ++no) total += SizeOf(GgufSplitPartPath(split->prefix, no, split->count));
  return total;
}

// <arch>.context_length of a GGUF file (headers only), 0 when absent.
int64_t GgufContextLength(const fs::path& file) {
  auto f = GgufFile::Open(file.string());
  if (!f.ok()) return 0;
  auto arch = (*f)->GetString("general.architecture");
  if (!arch.ok()) return 0;
  auto ctx = (*f)->GetInt(*arch + ".context_length");
  return ctx.ok() && *ctx > 0 ? *ctx : 0;
}

// A file or directory by what it is, not by the path (or link) that reached it.
struct FileIdentity {
  uint64_t dev = 0, ino = 0;
  auto operator<=>(const FileIdentity&) const = default;
};

std::optional<FileIdentity> IdentityOf(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

struct Scan {
  std::string root;
  std::vector<DiscoveredModel>* out;
  // Shared by every root: what was scanned or added already, by identity,
  // so that a link (to a parent, to itself, to another model) is never
  // followed twice. The path that reached it first wins.
  std::map<FileIdentity, std::string>* seen_folders;  // scanned for models
  std::map<FileIdentity, std::string>* seen_models;   // added as a model

  // False (and a log line) when `p` was reached before as a folder / model.
  bool FirstVisit(const fs::path& p, const char* what) {
    const std::optional<FileIdentity> id = IdentityOf(p);
    if (!id) return true;
    auto* seen = std::string_view(what) == "folder" ? seen_folders : seen_models;
    auto [it, inserted] = seen->emplace(*id, p.string());
    if (!inserted) {
      LOG_INFO("models: " << p.string() << " is the " << what << " " << it->second
                          << " again (a link): skipped");
    }
    return inserted;
  }

  void AddDirectory(const std::string& id, const fs::path& dir, ModelSource source) {
    if (FileExists((dir / "adapter_config.json").string())) return;  // a LoRA adapter
    if (!FirstVisit(dir, "model directory")) return;
    const uint64_t weights = ModelWeightBytes(dir.string());
    if (weights == 0) {
      LOG_DEBUG("models: " << dir.string() << " has config.json but no weight files: skipped");
      return;
    }
    DiscoveredModel m;
    m.id = id;
    m.path = dir.string();
    m.root = root;
    m.source = source;
    m.weight_bytes = weights;
    m.estimated_bytes = static_cast<uint64_t>(static_cast<double>(weights) * kEstimateFactor);
    ReadConfigInfo(dir, &m);
    out->push_back(std::move(m));
  }

  void AddGguf(const std::string& id, const fs::path& file) {
    const uint64_t size = GgufModelBytes(file);
    if (size == 0) return;
    if (!FirstVisit(file, "model file")) return;
    DiscoveredModel m;
    m.id = id;
    m.path = file.string();
    m.root = root;
    m.source = ModelSource::kGguf;
    m.weight_bytes = size;
    m.estimated_bytes = static_cast<uint64_t>(static_cast<double>(size) * kEstimateFactor);
    m.model_type = "gguf";
    m.context_length = GgufContextLength(file);
    out->push_back(std::move(m));
  }

  // A snapshot without config.json holding exactly one GGUF model (what
  // `llmhost pull ORG/NAME:QUANT` leaves; a split model counts once) is it.
  void AddSnapshotGguf(const std::string& id, const fs::path& snap) {
    std::vector<fs::path> ggufs;
    for (const auto& e : Children(snap)) {
      const std::string name = e.path().filename().string();
      if (EndsWith(Lower(name), ".gguf") && !LaterSplitPart(name) && IsFile(e.path())) ggufs.push_back(e.path());
    }
    if (ggufs.size() == 1) AddGguf(id, ggufs[0]);
  }

  // A snapshot: a model directory, or the GGUF model it holds.
  void AddSnapshot(const std::string& id, const fs::path& snap) {
    if (FileExists((snap / "config.json").string())) {
      AddDirectory(id, snap, ModelSource::kHfCache);
    } else {
      AddSnapshotGguf(id, snap);
    }
  }

  // Every revision of a Hugging Face cache folder. A ref naming a snapshot
  // that another ref named already (a tag on main's commit) is the same
  // model under its own id, so that each pulled name can be requested.
  void AddHfCache(const std::string& repo, const fs::path& folder) {
    std::map<std::string, size_t> added;  // snapshot → its entry in `out`
    for (const HfCacheRevision& r : HfCacheRevisions(folder.string())) {
      const std::string id = HfCacheRevisionId(repo, r.revision);
      if (auto it = added.find(r.snapshot); it != added.end()) {
        DiscoveredModel copy = (*out)[it->second];
        copy.id = id;
        out->push_back(std::move(copy));
        continue;
      }
      const size_t before = out->size();
      AddSnapshot(id, r.snapshot);
      if (out->size() > before) added.emplace(r.snapshot, before);
    }
  }

  // One level: models directly in `dir`; `prefix` ("" or "org/") names them.
  // Returns the folders that are none of the above (org candidates).
  std::vector<fs::path> Level(const fs::path& dir, const std::string& prefix) {
    std::vector<fs::path> others;
    if (!FirstVisit(dir, "folder")) return others;
    for (const auto& e : Children(dir)) {
      const std::string name = e.path().filename().string();
      if (Hidden(name)) continue;
      if (IsDir(e.path())) {
        const std::string hf = HfCacheModelId(name);
        if (!hf.empty()) {
          AddHfCache(hf, e.path());
        } else if (name.rfind("datasets--", 0) == 0 || name.rfind("spaces--", 0) == 0) {
          continue;  // other Hugging Face cache entries
        } else if (FileExists((e.path() / "config.json").string())) {
          AddDirectory(prefix + name, e.path(), ModelSource::kDirectory);
        } else {
          others.push_back(e.path());
        }
      } else if (EndsWith(Lower(name), ".gguf") && !LaterSplitPart(name) && IsFile(e.path())) {
        AddGguf(prefix + GgufModelName(name), e.path());
      }
    }
    return others;
  }
};

}  // namespace

std::string HfCacheModelId(const std::string& folder) {
  const std::string prefix = "models--";
  if (folder.rfind(prefix, 0) != 0) return "";
  const std::string rest = folder.substr(prefix.size());
  const size_t sep = rest.find("--");
  if (sep == std::string::npos) return rest.empty() ? "" : rest;  // models--Name (no org)
  const std::string org = rest.substr(0, sep), name = rest.substr(sep + 2);
  if (org.empty() || name.empty()) return "";
  return org + "/" + name;
}

std::string HfCacheSnapshot(const std::string& folder_path) {
  const std::vector<HfCacheRevision> revisions = HfCacheRevisions(folder_path);
  return !revisions.empty() && revisions[0].revision == "main" ? revisions[0].snapshot : "";
}

uint64_t ModelWeightBytes(const std::string& dir) {
  const fs::path d(dir);
  uint64_t total = SumFiles(d, [](const std::string& n) { return EndsWith(n, ".safetensors"); });
  if (total == 0) {
    total = SumFiles(d, [](const std::string& n) {
      const std::string l = Lower(n);
      return EndsWith(l, ".bin") && l.find("optimizer") == std::string::npos &&
             l.find("training") == std::string::npos;
    });
  }
  if (total == 0) total = SumSafetensorsRecursive(d, 0);
  return total;
}

bool ModelStillPresent(const DiscoveredModel& model) { return model.random() || FileExists(model.path); }

namespace {

// The one model of a random-weights root; nullopt (warned) when it does not open.
std::optional<DiscoveredModel> RandomModelRoot(const std::string& spec) {
  auto r = ParseRandomModelSpec(spec);
  auto parts = r.ok() ? OpenRandomModel(spec, nullptr) : Result<RandomModelParts>(r.status());
  if (!parts.ok()) {
    LOG_WARN("models: " << parts.status().message() << ": skipped");
    return std::nullopt;
  }
  DiscoveredModel m;
  m.id = r->name;
  m.path = spec;
  m.root = spec;
  m.source = ModelSource::kRandom;
  m.weight_bytes = parts->weight_bytes;
  m.estimated_bytes = static_cast<uint64_t>(static_cast<double>(m.weight_bytes) * kEstimateFactor);
  m.model_type = parts->config.model_type;
  m.context_length = parts->config.max_position_embeddings;
  return m;
}

}  // namespace

std::vector<DiscoveredModel> DiscoverModels(const std::vector<std::string>& roots) {
  std::vector<DiscoveredModel> all;
  std::set<std::string> seen;
  std::map<FileIdentity, std::string> folders, models;
  for (const std::string& root : roots) {
    if (IsRandomModelSpec(root)) {
      std::optional<DiscoveredModel> m = RandomModelRoot(root);
      if (m && seen.insert(m->id).second) all.push_back(std::move(*m));
      continue;
    }
    if (!IsDirectory(root)) {
      LOG_WARN("models: " << root << " is not a directory: skipped");
      continue;
    }
    std::vector<DiscoveredModel> found;
    Scan scan{root, &found, &folders, &models};
    const fs::path r(root);
    for (const fs::path& org : scan.Level(r, "")) scan.Level(org, org.filename().string() + "/");
    if (found.empty() && FileExists(JoinPath(root, "config.json"))) {
      fs::path abs = fs::absolute(r).lexically_normal();
      std::string name = abs.filename().string();
      if (name.empty()) name = abs.parent_path().filename().string();
      scan.AddDirectory(name, r, ModelSource::kDirectory);
    }
    for (DiscoveredModel& m : found) {
      if (!seen.insert(m.id).second) {
        LOG_WARN("models: duplicate id '" << m.id << "' at " << m.path << ": the first one is kept");
        continue;
      }
      all.push_back(std::move(m));
    }
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return all;
}

}  // namespace llmhost
