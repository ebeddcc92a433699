// Builds safetensors files: header JSON padded with spaces to a multiple of 8
// bytes, then the tensors' bytes. Used by the SSD KV-cache tier (one file per
// block) and by tests.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "formats/dtype.h"
#include "util/status.h"

namespace llmhost {

struct SafetensorsWriteTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // row-major, outermost first
  std::string_view data;       // prod(shape) * DTypeSize(dtype) bytes, not owned
};

// Serializes a whole file, byte for byte as the reference writer
// (huggingface/safetensors) does: tensors laid out by descending dtype (8-byte
// types first, so each tensor is aligned to its element size in an 8-aligned
// map), then by name; header keys `__metadata__` first, then the tensors in
// layout order. `metadata`
// becomes `__metadata__` (omitted when empty). InvalidArgument on duplicate or
// reserved names, negative dimensions, or data of the wrong size.
Result<std::string> SerializeSafetensors(const std::vector<SafetensorsWriteTensor>& tensors,
                                         const std::map<std::string, std::string>& metadata);

// SerializeSafetensors, then WriteFileAtomic(path, ...).
Status WriteSafetensorsFile(const std::string& path,
                            const std::vector<SafetensorsWriteTensor>& tensors,
                            const std::map<std::string, std::string>& metadata);

}  // namespace llmhost
