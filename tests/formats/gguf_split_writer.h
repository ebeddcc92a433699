// Test helper: cuts a GGUF image into the parts of a split model, laid out as
// llama.cpp's gguf-split writes them (the first part keeps all metadata; each
// part has split.no / split.count, the first split.tensors.count). `tweak`
// may change a part's split keys to build broken splits.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_builder.h"

namespace llmhost::testing {

struct SplitKeys {
  uint16_t no = 0;
  uint16_t count = 0;
  int32_t tensors = 0;  // written in the first part only
};

namespace split_detail {

inline uint64_t ReadU64(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}
inline uint32_t ReadU32(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// Bytes of one metadata value of `type` at `at`.
inline size_t ValueBytes(const std::string& b, size_t at, uint32_t type) {
  switch (type) {
    case 0: case 1: case 7: return 1;
    case 2: case 3: return 2;
    case 4: case 5: case 6: return 4;
    case 10: case 11: case 12: return 8;
    case 8: return 8 + ReadU64(b, at);
    case 9: {
      const uint32_t elem = ReadU32(b, at);
      const uint64_t n = ReadU64(b, at + 4);
      size_t p = at + 12;
      for (uint64_t i = 0; i < n; ++i) p += ValueBytes(b, p, elem);
      return p - at;
    }
  }
  throw std::runtime_error("unknown GGUF value type");
}

}  // namespace split_detail

// `image`: a valid GGUF file (alignment 32). `per_part`: tensors per part,
// in the file's tensor order, adding up to all of them.
inline std::vector<std::string> SplitGguf(const std::string& image, const std::vector<size_t>& per_part,
                                          const std::function<void(size_t, SplitKeys&)>& tweak = {}) {
  using split_detail::ReadU32;
  using split_detail::ReadU64;
  auto parsed = GgufFile::Parse(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "image");
  if (!parsed.ok() || (*parsed)->alignment() != 32) throw std::runtime_error("not a GGUF image with alignment 32");
  const GgufFile& f = **parsed;
  // The metadata section: from the header's end to the first tensor info.
  const uint64_t n_kv = ReadU64(image, 16);
  size_t kv_end = 24;
  for (uint64_t i = 0; i < n_kv; ++i) {
    kv_end += 8 + ReadU64(image, kv_end);  // key
    const uint32_t type = ReadU32(image, kv_end);
    kv_end += 4 + split_detail::ValueBytes(image, kv_end + 4, type);
  }
  const std::string metadata = image.substr(24, kv_end - 24);

  std::vector<std::string> parts;
  size_t next = 0;
  for (size_t p = 0; p < per_part.size(); ++p) {
    SplitKeys keys{static_cast<uint16_t>(p), static_cast<uint16_t>(per_part.size()),
                   static_cast<int32_t>(f.tensors().size())};
    if (tweak) tweak(p, keys);
    GgufWriter w;
    w.Header(f.version(), per_part[p], (p == 0 ? n_kv : 0) + (p == 0 ? 3 : 2));
    if (p == 0) w.bytes += metadata;
    w.Str("split.no").U32(2).Put<uint16_t>(keys.no);
    w.Str("split.count").U32(2).Put<uint16_t>(keys.count);
    if (p == 0) w.Str("split.tensors.count").U32(5).Put<int32_t>(keys.tensors);
    std::string data;
    for (size_t i = next; i < next + per_part[p]; ++i) {
      const GgufTensorInfo& t = f.tensors()[i];
      while (data.size() % 32 != 0) data.push_back('\0');
      w.TensorInfo(t.name, t.shape, static_cast<uint32_t>(t.type), data.size());
      data.append(reinterpret_cast<const char*>(f.TensorData(t)), t.n_bytes);
    }
    next += per_part[p];
    w.Align(32);
    w.bytes += data;
    parts.push_back(std::move(w.bytes));
  }
  if (next != f.tensors().size()) throw std::runtime_error("per_part does not add up to the tensors");
  return parts;
}

}  // namespace llmhost::testing
