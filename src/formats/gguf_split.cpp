#include "formats/gguf_split.h"

#include <cctype>
#include <cstdio>

namespace llmhost {

namespace {

constexpr int kSplitDigits = 5;
constexpr std::string_view kOf = "-of-";
constexpr std::string_view kExt = ".gguf";

bool Digits(std::string_view s) {
  if (s.size() != kSplitDigits) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// split.* keys are small integers; a missing one is "absent", not zero.
Result<std::optional<int64_t>> SplitKey(const GgufFile& f, std::string_view key) {
  if (!f.Has(key)) return std::optional<int64_t>();
  auto v = f.GetInt(key);
  if (!v.ok()) return Status::InvalidArgument(f.path() + ": " + v.status().message());
  return std::optional<int64_t>(*v);
}

Status Mismatch(const GgufFile& f, const std::string& what) { return Status::InvalidArgument(f.path() + ": " + what); }

}  // namespace

std::optional<GgufSplitName> ParseGgufSplitName(std::string_view path) {
  // PREFIX-NNNNN-of-NNNNN.gguf: 1 + 5 + 4 + 5 + 5 characters after PREFIX.
  const size_t tail = 1 + kSplitDigits + kOf.size() + kSplitDigits + kExt.size();
  if (path.size() <= tail) return std::nullopt;
  const std::string_view t = path.substr(path.size() - tail);
  if (t[0] != '-' || t.substr(1 + kSplitDigits, kOf.size()) != kOf || t.substr(t.size() - kExt.size()) != kExt) {
    return std::nullopt;
  }
  const std::string_view no = t.substr(1, kSplitDigits);
  const std::string_view count = t.substr(1 + kSplitDigits + kOf.size(), kSplitDigits);
  if (!Digits(no) || !Digits(count)) return std::nullopt;
  GgufSplitName out;
  out.prefix = std::string(path.substr(0, path.size() - tail));
  out.no = std::stoi(std::string(no));
  out.count = std::stoi(std::string(count));
  if (out.no < 1 || out.no > out.count || out.count > kMaxGgufSplitParts) return std::nullopt;
  return out;
}

std::string GgufSplitPartPath(std::string_view prefix, int no, int count) {
  char tail[32];
  std::snprintf(tail, sizeof(tail), "-%05d-of-%05d.gguf", no, count);
  return std::string(prefix) + tail;
}

Result<std::unique_ptr<GgufModelFiles>> GgufModelFiles::Open(const std::string& path) {
  auto out = std::unique_ptr<GgufModelFiles>(new GgufModelFiles());
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> first, GgufFile::Open(path));
  ASSIGN_OR_RETURN(std::optional<int64_t> count, SplitKey(*first, "split.count"));
  const std::optional<GgufSplitName> name = ParseGgufSplitName(path);
  if (!count) {
    if (name && name->count > 1) {
      return Mismatch(*first, "named as part " + std::to_string(name->no) + " of " + std::to_string(name->count) +
                                  " of a split model, but has no split.count");
    }
    count = 1;
  }
  if (*count < 1 || *count > kMaxGgufSplitParts) {
    return Mismatch(*first, "split.count " + std::to_string(*count) + " is outside 1.." +
                                std::to_string(kMaxGgufSplitParts));
  }
  if (*count > 1) {
    if (!name || name->no != 1) {
      return Mismatch(*first, "split.count is " + std::to_string(*count) +
                                  ": open the split's first part, named PREFIX" +
                                  GgufSplitPartPath("", 1, static_cast<int>(*count)));
    }
    if (name->count != *count) {
      return Mismatch(*first, "split.count is " + std::to_string(*count) + " but the file name says " +
                                  std::to_string(name->count) + " parts");
    }
  }
  out->parts_.push_back(std::move(first));
  for (int no = 2; no <= *count; ++no) {
    const std::string part_path = GgufSplitPartPath(name->prefix, no, static_cast<int>(*count));
    if (!FileExists(part_path)) {
      return Status::NotFound(part_path + ": part " + std::to_string(no) + " of " + std::to_string(*count) +
                              " of the split model " + path + " is missing");
    }
    ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> part, GgufFile::Open(part_path));
    out->parts_.push_back(std::move(part));
  }
  // Every part says where it belongs.
  size_t total = 0;
  for (size_t i = 0; i < out->parts_.size(); ++i) {
    const GgufFile& part = *out->parts_[i];
    if (*count > 1) {
      ASSIGN_OR_RETURN(std::optional<int64_t> pc, SplitKey(part, "split.count"));
      ASSIGN_OR_RETURN(std::optional<int64_t> pn, SplitKey(part, "split.no"));
      if (pc != count) {
        return Mismatch(part, "split.count is " + (pc ? std::to_string(*pc) : std::string("absent")) +
                                  ", the first part says " + std::to_string(*count));
      }
      if (pn != static_cast<int64_t>(i)) {
        return Mismatch(part, "split.no is " + (pn ? std::to_string(*pn) : std::string("absent")) +
                                  ", expected " + std::to_string(i) + " (0-based) for this part");
      }
    }
    for (const GgufTensorInfo& t : part.tensors()) {
      if (!out->part_of_.emplace(t.name, i).second) {
        return Mismatch(part, "tensor '" + t.name + "' is also in part " +
                                  std::to_string(out->part_of_[t.name] + 1));
      }
      out->tensors_.push_back(&t);
    }
    total += part.tensors().size();
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> declared, SplitKey(out->first(), "split.tensors.count"));
  if (declared && *declared != static_cast<int64_t>(total)) {
    return Mismatch(out->first(), "split.tensors.count is " + std::to_string(*declared) + " but the " +
                                      std::to_string(out->parts_.size()) + " part(s) hold " + std::to_string(total) +
                                      " tensors");
  }
  return out;
}

uint64_t GgufModelFiles::total_file_bytes() const {
  uint64_t total = 0;
  for (const auto& p : parts_) total += p->size();
  return total;
}

const GgufTensorInfo* GgufModelFiles::FindTensor(std::string_view name) const {
  auto it = part_of_.find(name);
  return it == part_of_.end() ? nullptr : parts_[it->second]->FindTensor(name);
}

const uint8_t* GgufModelFiles::TensorData(const GgufTensorInfo& t) const {
  return parts_[part_of_.find(t.name)->second]->TensorData(t);
}

}  // namespace llmhost
