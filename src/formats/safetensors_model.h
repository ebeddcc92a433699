// A model's weights as safetensors: one file, or shards listed by
// model.safetensors.index.json, behind one lookup by tensor name.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formats/safetensors.h"
#include "util/status.h"

namespace llmhost {

inline constexpr char kSafetensorsSingleName[] = "model.safetensors";
inline constexpr char kSafetensorsIndexName[] = "model.safetensors.index.json";

class SafetensorsModel {
 public:
  enum class Layout {
    kSingleFile,  // `path` was a file, or the directory holds model.safetensors
    kIndexed,     // model.safetensors.index.json + the shards it names
    kAllFiles,    // fallback: every *.safetensors file in the directory
  };

  // `path` is a model directory or one .safetensors file. In a directory,
  // model.safetensors wins over the index (as in transformers), and the index
  // over the fallback. Shards are mapped, not read: opening is cheap.
  static Result<std::unique_ptr<SafetensorsModel>> Open(const std::string& path);

  struct Entry {
    const SafetensorsFile* file;
    const SafetensorsTensorInfo* info;
  };

  Layout layout() const { return layout_; }
  const std::string& dir() const { return dir_; }
  // The mapped files, in file-name order.
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  // Every tensor by name (sorted). With an index, exactly its weight_map.
  const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
  const Entry* Find(std::string_view name) const;
  // NotFound naming the model directory when absent.
  Result<TensorView> Tensor(std::string_view name) const;
  size_t tensor_count() const { return entries_.size(); }
  uint64_t total_tensor_bytes() const;  // sum of the tensors' data bytes
  uint64_t total_file_bytes() const;    // sum of the files' sizes

 private:
  SafetensorsModel() = default;
  Status AddFile(const std::string& path, bool add_all_tensors);

  Layout layout_ = Layout::kSingleFile;
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace llmhost
