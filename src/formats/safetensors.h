// safetensors reader over a memory map: 8-byte little-endian header length N,
// N bytes of JSON header, then the tensor data. Opening parses only the header;
// tensor data is never copied or read (TensorView points into the map).
//
// Validation follows the reference implementation (huggingface/safetensors,
// Rust crate): header at most 100,000,000 bytes; every tensor's data_offsets
// [begin, end) relative to the data section; sorted by begin the tensors must
// be contiguous from 0 (no holes, no overlaps) and the last end must be the
// end of the file (no trailing bytes); end - begin == prod(shape) * dtype size.
// `__metadata__`, when present, is an object of string values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formats/dtype.h"
#include "util/file.h"
#include "util/status.h"

namespace llmhost {

inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// A zero-copy view of one tensor's bytes.
struct TensorView {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;     // row-major, outermost dimension first
  const uint8_t* data = nullptr;  // inside the map; aligned only as the file is
  size_t n_bytes = 0;
  int64_t NumElements() const;
};

struct SafetensorsTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // row-major, outermost first
  uint64_t begin = 0;          // [begin, end): bytes relative to the data section
  uint64_t end = 0;
  uint64_t n_bytes() const { return end - begin; }
  int64_t NumElements() const;
};

class SafetensorsFile {
 public:
  // Maps `path` and parses its header.
  static Result<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  // Parses an in-memory image; `data` must outlive the result. `name` is used
  // in error messages and as path().
  static Result<std::unique_ptr<SafetensorsFile>> Parse(const uint8_t* data, size_t size,
                                                        std::string name);
  ~SafetensorsFile();

  const std::string& path() const { return name_; }
  uint64_t header_size() const { return header_size_; }    // N
  uint64_t data_offset() const { return 8 + header_size_; }
  uint64_t data_size() const { return size_ - data_offset(); }
  // `__metadata__` (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // All tensors, sorted by data offset (the physical order in the file).
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  const SafetensorsTensorInfo* Find(std::string_view name) const;
  TensorView View(const SafetensorsTensorInfo& t) const;
  // NotFound naming the file when `name` is absent.
  Result<TensorView> Tensor(std::string_view name) const;

 private:
  SafetensorsFile() = default;
  static Result<std::unique_ptr<SafetensorsFile>> ParseImpl(const uint8_t* data, size_t size,
                                                            std::string name,
                                                            std::unique_ptr<MappedFile> map);

  std::unique_ptr<MappedFile> map_;  // null for Parse()
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  uint64_t header_size_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> tensors_ index
};

// "[2, 3]"
std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace llmhost
