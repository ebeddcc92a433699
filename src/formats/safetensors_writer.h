// Builds safetensors files: header JSON padded with spaces to a multiple of 8
// bytes, then the tensors' bytes. Used by the SSD KV-cache tier (one file per
// block), by tests, and (streaming, one tensor at a time) by synth-model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
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

// A tensor's header entry without its data (for the streaming writer).
struct SafetensorsTensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
};

// Writes a safetensors file whose tensors are too large to hold in memory
// together: the header is computed from the specs alone, then the caller
// appends each tensor's bytes in layout() order (the same layout and header
// as SerializeSafetensors). The file is written to a temporary name and
// renamed into place by Finish(); a writer destroyed unfinished removes it.
//
//   auto w = SafetensorsStreamWriter::Create(path, specs, {});
//   for (const SafetensorsTensorSpec& t : (*w)->layout()) {
//     while (...) RETURN_IF_ERROR((*w)->Append(chunk_of_t));
//   }
//   RETURN_IF_ERROR((*w)->Finish());
class SafetensorsStreamWriter {
 public:
  // InvalidArgument as SerializeSafetensors; IOError if the file cannot be
  // created.
  static Result<std::unique_ptr<SafetensorsStreamWriter>> Create(
      const std::string& path, const std::vector<SafetensorsTensorSpec>& tensors,
      const std::map<std::string, std::string>& metadata);
  ~SafetensorsStreamWriter();
  SafetensorsStreamWriter(const SafetensorsStreamWriter&) = delete;
  SafetensorsStreamWriter& operator=(const SafetensorsStreamWriter&) = delete;

  // The tensors in the order their bytes go into the file.
  const std::vector<SafetensorsTensorSpec>& layout() const { return layout_; }
  // Index into layout() of the tensor the next Append continues (layout().size() when all are complete).
  size_t current() const { return current_; }
  // Appends bytes to the file; they may span tensor boundaries.
  // InvalidArgument past the last tensor's end; IOError on a write failure.
  Status Append(std::string_view bytes);
  // Checks that every tensor is complete, then fsyncs and renames into place.
  Status Finish();

 private:
  SafetensorsStreamWriter() = default;
  Status WriteAll(std::string_view bytes);
  Status Flush();

  std::string path_, tmp_;
  int fd_ = -1;
  std::vector<SafetensorsTensorSpec> layout_;
  std::vector<uint64_t> ends_;  // per tensor: end offset of its data (after the header)
  uint64_t written_ = 0;        // data bytes appended so far
  size_t current_ = 0;
  std::string buffer_;          // batches small appends into large writes
};

}  // namespace llmhost
