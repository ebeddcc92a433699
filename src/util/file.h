// Files: read-only memory maps, whole-file reads, atomic writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "util/status.h"

namespace llmhost {

// A read-only, private memory map of a whole file. Movable, not copyable; the
// mapping lives until the object is destroyed. An empty file maps to size 0
// with data() == nullptr.
class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

// Reads a whole file into a string; InvalidArgument naming the file when it
// holds more than `max_bytes` (nothing beyond the limit is read).
Result<std::string> ReadFileToString(const std::string& path, size_t max_bytes = std::numeric_limits<size_t>::max());

// Writes `data` to `path` atomically: a temp file in the same directory,
// fsync, rename over `path`, then fsync the directory.
Status WriteFileAtomic(const std::string& path, std::string_view data);

bool FileExists(const std::string& path);
bool IsDirectory(const std::string& path);
// "a/b" + "c" -> "a/b/c" (no normalisation beyond one separator).
std::string JoinPath(std::string_view a, std::string_view b);
// Last path component: "/x/y.gguf" -> "y.gguf".
std::string BaseName(std::string_view path);
// Parent directory: "/x/y.gguf" -> "/x"; "y" -> ".".
std::string DirName(std::string_view path);

}  // namespace llmhost
