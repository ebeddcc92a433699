// Test helper: writes GGUF images byte by byte, so that tests can build valid
// files and then break exactly one thing.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace llmhost::testing {

class GgufWriter {
 public:
  std::string bytes;

  template <typename T>
  GgufWriter& Put(T v) {
    char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    bytes.append(buf, sizeof(T));
    return *this;
  }
  GgufWriter& U8(uint8_t v) { return Put(v); }
  GgufWriter& U32(uint32_t v) { return Put(v); }
  GgufWriter& U64(uint64_t v) { return Put(v); }
  GgufWriter& Str(const std::string& s) {
    U64(s.size());
    bytes += s;
    return *this;
  }
  // Header: magic, version, tensor count, metadata count.
  GgufWriter& Header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    bytes += "GGUF";
    return U32(version).U64(n_tensors).U64(n_kv);
  }
  // Metadata entry helpers (key, type, value).
  GgufWriter& KvU32(const std::string& k, uint32_t v) { return Str(k).U32(4).U32(v); }
  GgufWriter& KvStr(const std::string& k, const std::string& v) { return Str(k).U32(8).Str(v); }
  GgufWriter& KvF32(const std::string& k, float v) { return Str(k).U32(6).Put(v); }
  GgufWriter& KvBool(const std::string& k, bool v) { return Str(k).U32(7).U8(v ? 1 : 0); }
  GgufWriter& KvStrArray(const std::string& k, const std::vector<std::string>& v) {
    Str(k).U32(9).U32(8).U64(v.size());
    for (const auto& s : v) Str(s);
    return *this;
  }
  // Tensor info: name, dims (ne0 first), ggml type, offset.
  GgufWriter& TensorInfo(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type,
                         uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) U64(d);
    return U32(type).U64(offset);
  }
  // Pads with zeros to a multiple of `alignment`.
  GgufWriter& Align(size_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back('\0');
    return *this;
  }
  GgufWriter& Zeros(size_t n) {
    bytes.append(n, '\0');
    return *this;
  }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(bytes.data()); }
  size_t size() const { return bytes.size(); }
};

}  // namespace llmhost::testing
