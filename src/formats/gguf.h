// GGUF (v2/v3) reader over a memory map: metadata of every type, tensor
// infos, alignment, and zero-copy views of tensor data.
// Spec: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
//
// Opening reads only the header (metadata values are decoded on access).
// Validation, for untrusted files: little-endian v2/v3 only (v1 and
// big-endian files are NotSupported); every count and length is bounded by
// the bytes left; arrays nest at most 8 deep; no duplicate keys or tensor
// names; general.alignment (default 32) a power of two; at most 4 dimensions,
// each <= INT64_MAX and their product too; ne[0] a multiple of the type's
// block size (ggml quantizes rows); unknown tensor types are NotSupported
// naming the tensor and the number; offsets aligned; tensor data inside the
// file and not overlapping.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/file.h"
#include "util/status.h"

namespace llmhost {

// Metadata value types, numbered as in the file.
enum class GgufValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};

// Tensor types (ggml_type numbering) that llmhost recognises.
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kBF16 = 30,
};

struct GgmlTypeTraits {
  const char* name;      // "Q4_K"
  uint32_t block_size;   // elements per block (1 for plain types)
  uint32_t type_size;    // bytes per block
};
// Traits of a type, or nullopt when the numeric type is unknown.
std::optional<GgmlTypeTraits> GgmlTypeInfo(uint32_t type);

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> shape;  // ne[0] (fastest-varying) first, as in the file
  GgmlType type;
  uint64_t offset;       // relative to the start of the data section
  uint64_t n_elements;
  uint64_t n_bytes;
};

class GgufFile {
 public:
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses an in-memory image (used by the fuzzer and tests). `data` must
  // outlive the returned object.
  static Result<std::unique_ptr<GgufFile>> Parse(const uint8_t* data, size_t size, std::string name);
  ~GgufFile();

  uint32_t version() const;
  uint64_t alignment() const;
  const std::string& path() const;
  uint64_t size() const;         // bytes in the file (or image)
  uint64_t data_offset() const;  // start of the data section (aligned)

  // Metadata access. Each getter fails with NotFound when the key is absent
  // and InvalidArgument when it has another type; integer getters accept any
  // integer type that fits.
  bool Has(std::string_view key) const;
  std::optional<GgufValueType> TypeOf(std::string_view key) const;
  std::optional<GgufValueType> ArrayElementType(std::string_view key) const;
  std::vector<std::string> Keys() const;  // in file order
  Result<std::string> GetString(std::string_view key) const;
  Result<int64_t> GetInt(std::string_view key) const;
  Result<double> GetFloat(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::vector<std::string>> GetStringArray(std::string_view key) const;
  Result<std::vector<int64_t>> GetIntArray(std::string_view key) const;
  Result<std::vector<double>> GetFloatArray(std::string_view key) const;
  // A short human-readable rendering of any value (arrays abbreviated).
  std::string DescribeValue(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const;
  const GgufTensorInfo* FindTensor(std::string_view name) const;
  // Pointer to the first byte of a tensor's data inside the map.
  const uint8_t* TensorData(const GgufTensorInfo& t) const;

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmhost
