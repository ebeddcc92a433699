// Private to the GGUF reader (gguf.cpp, gguf_metadata.cpp): the parsed index
// of a GGUF image. Metadata values are not decoded at parse time; each entry
// points at its bytes in the map and is decoded on access.
#pragma once

#include <cstring>
#include <functional>
#include <map>

#include "formats/gguf.h"

namespace llmhost {

// Bytes of a fixed-size value type; 0 for string, array and unknown types.
size_t GgufScalarSize(uint32_t type);
const char* GgufValueTypeName(uint32_t type);

struct GgufKv {
  std::string key;
  GgufValueType type;
  // Arrays: element type and count; `value` points at the first element.
  GgufValueType elem_type = GgufValueType::kUint8;
  uint64_t count = 0;
  const uint8_t* value = nullptr;  // scalars and strings: the value's encoding
  uint64_t value_size = 0;         // bytes from `value` to the end of the value
};

// The value of an integer-typed scalar entry; InvalidArgument naming `file`
// and the key for other types or a uint64 above INT64_MAX.
Result<int64_t> GgufScalarInt(const GgufKv& kv, const std::string& file);

// The parsed index; GgufFile::Impl is exactly this (named apart so that
// helpers outside the class can use it).
struct GgufImage {
  std::unique_ptr<MappedFile> map;  // null for Parse()
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  std::string name;
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;
  std::vector<GgufKv> kvs;  // file order
  std::map<std::string, size_t, std::less<>> kv_index;
  std::vector<GgufTensorInfo> tensors;  // file order
  std::map<std::string, size_t, std::less<>> tensor_index;

  const GgufKv* Find(std::string_view key) const {
    auto it = kv_index.find(key);
    return it == kv_index.end() ? nullptr : &kvs[it->second];
  }
};

template <typename T>
inline T LoadLe(const uint8_t* p) {  // the host is little-endian (checked in gguf.cpp)
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

struct GgufFile::Impl : GgufImage {};

}  // namespace llmhost
