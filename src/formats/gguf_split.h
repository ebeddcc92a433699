// Split GGUF models, as llama.cpp's gguf-split writes them: parts named
// `PREFIX-00001-of-0000N.gguf` … `PREFIX-0000N-of-0000N.gguf` (five digits
// each). Every part carries `split.no` (0-based) and `split.count`; the
// first one also carries the model's metadata and `split.tensors.count`
// (tensors in all parts). Tensors are spread over the parts, each whole in
// one part.
//
// GgufModelFiles opens a model file and, when it is a split's first part,
// every other part, checking that each is there, says it is that part of
// that many, and that the tensors add up with no name twice. A file without
// `split.count` is a model by itself (one part).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "util/status.h"

namespace llmhost {

// More parts than this is taken for a damaged header.
inline constexpr int64_t kMaxGgufSplitParts = 9999;

struct GgufSplitName {
  std::string prefix;  // the path up to "-00001-of-…"
  int no = 0;          // 1-based, as in the name
  int count = 0;
};

// The split part a path names, nullopt for other names.
std::optional<GgufSplitName> ParseGgufSplitName(std::string_view path);
// PREFIX-0000<no>-of-0000<count>.gguf
std::string GgufSplitPartPath(std::string_view prefix, int no, int count);

class GgufModelFiles {
 public:
  // NotFound naming a missing part; InvalidArgument for parts that disagree
  // (split.count, split.no, split.tensors.count, a tensor twice) or a name
  // and metadata that disagree; the GGUF reader's errors for each part.
  static Result<std::unique_ptr<GgufModelFiles>> Open(const std::string& path);

  const GgufFile& first() const { return *parts_.front(); }  // the metadata
  size_t part_count() const { return parts_.size(); }
  uint64_t total_file_bytes() const;

  // Every tensor, part by part in file order.
  const std::vector<const GgufTensorInfo*>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;
  // `t` must come from tensors() or FindTensor().
  const uint8_t* TensorData(const GgufTensorInfo& t) const;

 private:
  std::vector<std::unique_ptr<GgufFile>> parts_;
  std::vector<const GgufTensorInfo*> tensors_;
  std::map<std::string, size_t, std::less<>> part_of_;  // tensor name → index in parts_
};

}  // namespace llmhost
