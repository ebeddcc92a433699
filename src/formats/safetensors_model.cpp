#include "formats/safetensors_model.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

#include "util/json.h"

namespace llmhost {

namespace {

using Json = nlohmann::json;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A shard name from an index must stay inside the model directory.
bool IsSafeRelativePath(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    if (slash == std::string::npos) slash = p.size();
    std::string_view part(p.data() + start, slash - start);
    if (part == "..") return false;
    start = slash + 1;
  }
  return true;
}

}  // namespace

Status SafetensorsModel::AddFile(const std::string& path, bool add_all_tensors) {
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> f, SafetensorsFile::Open(path));
  if (add_all_tensors) {
    for (const SafetensorsTensorInfo& t : f->tensors()) {
      auto [it, inserted] = entries_.emplace(t.name, Entry{f.get(), &t});
      if (!inserted) {
        return Status::Corruption(dir_ + ": tensor '" + t.name + "' appears in both " +
                                  BaseName(it->second.file->path()) + " and " + BaseName(path));
      }
    }
  }
  files_.push_back(std::move(f));
  return Status::OK();
}

Result<std::unique_ptr<SafetensorsModel>> SafetensorsModel::Open(const std::string& path) {
  std::unique_ptr<SafetensorsModel> m(new SafetensorsModel());
  if (!IsDirectory(path)) {
    if (!FileExists(path)) return Status::NotFound(path + ": no such file or directory");
    m->dir_ = DirName(path);
    m->layout_ = Layout::kSingleFile;
    RETURN_IF_ERROR(m->AddFile(path, true));
    return m;
  }
  m->dir_ = path;

  std::string single = JoinPath(path, kSafetensorsSingleName);
  if (FileExists(single)) {
    m->layout_ = Layout::kSingleFile;
    RETURN_IF_ERROR(m->AddFile(single, true));
    return m;
  }

  std::string index_path = JoinPath(path, kSafetensorsIndexName);
  if (FileExists(index_path)) {
    m->layout_ = Layout::kIndexed;
    ASSIGN_OR_RETURN(Json index, ReadJsonFile(index_path, kJsonModelFileMaxBytes));
    if (!index.is_object()) {
      return Status::Corruption(index_path + ": not a JSON object");
    }
    auto wm = index.find("weight_map");
    if (wm == index.end() || !wm->is_object()) {
      return Status::Corruption(index_path + ": missing object 'weight_map'");
    }
    std::map<std::string, std::string> weight_map;  // tensor -> shard
    std::set<std::string> shards;
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      if (!it->is_string()) {
        return Status::Corruption(index_path + ": weight_map['" + it.key() + "'] is not a string");
      }
      const std::string& shard = it->get_ref<const std::string&>();
      if (!IsSafeRelativePath(shard)) {
        return Status::Corruption(index_path + ": shard name '" + shard +
                                  "' is not a relative path inside the model directory");
      }
      weight_map[it.key()] = shard;
      shards.insert(shard);
    }
    std::map<std::string, const SafetensorsFile*> by_shard;
    for (const std::string& shard : shards) {
      std::string shard_path = JoinPath(path, shard);
      if (!FileExists(shard_path)) {
        return Status::NotFound(index_path + ": shard '" + shard + "' does not exist");
      }
      RETURN_IF_ERROR(m->AddFile(shard_path, false));
      by_shard[shard] = m->files_.back().get();
    }
    for (const auto& [tensor, shard] : weight_map) {
      const SafetensorsFile* f = by_shard[shard];
      const SafetensorsTensorInfo* info = f->Find(tensor);
      if (info == nullptr) {
        return Status::Corruption(index_path + ": tensor '" + tensor + "' is not in its shard '" +
                                  shard + "'");
      }
      m->entries_.emplace(tensor, Entry{f, info});
    }
    return m;
  }

  // Fallback: every *.safetensors file in the directory.
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& de : std::filesystem::directory_iterator(path, ec)) {
    std::string name = de.path().filename().string();
    std::error_code ec2;
    if (EndsWith(name, ".safetensors") && de.is_regular_file(ec2)) names.push_back(name);
  }
  if (ec) return Status::IOError(path + ": cannot list directory: " + ec.message());
  if (names.empty()) {
    return Status::NotFound(path + ": no " + std::string(kSafetensorsSingleName) + ", " +
                            kSafetensorsIndexName + " or *.safetensors file");
  }
  std::sort(names.begin(), names.end());
  m->layout_ = Layout::kAllFiles;
  for (const std::string& name : names) RETURN_IF_ERROR(m->AddFile(JoinPath(path, name), true));
  return m;
}

const SafetensorsModel::Entry* SafetensorsModel::Find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

Result<TensorView> SafetensorsModel::Tensor(std::string_view name) const {
  const Entry* e = Find(name);
  if (e == nullptr) return Status::NotFound(dir_ + ": no tensor named '" + std::string(name) + "'");
  return e->file->View(*e->info);
}

uint64_t SafetensorsModel::total_tensor_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, e] : entries_) total += e.info->n_bytes();
  return total;
}

uint64_t SafetensorsModel::total_file_bytes() const {
  uint64_t total = 0;
  for (const auto& f : files_) total += f->data_offset() + f->data_size();
  return total;
}

}  // namespace llmhost
