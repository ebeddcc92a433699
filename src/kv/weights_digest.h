// Digests of every byte of weight files, and where they are remembered.
//
// A file's digest: its content in 64 MiB chunks, each hashed (SHA-256) on
// one of several threads, then the chunk digests hashed in order together
// with the size and the chunk size. Several threads keep up with a fast
// disk; one SHA-256 stream would not.
//
// WeightsDigestCache keeps digests in <home>/weights_digests.json keyed by
// what identifies one version of a file: (device, inode, size, mtime,
// ctime). A rewrite in place changes mtime and ctime (ctime cannot be set
// back by a user), a replacement the inode, so a remembered digest is never
// used for other bytes; a model loaded again, or after a restart, is not
// read again.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "util/sha256.h"
#include "util/status.h"

namespace llmhost {

inline constexpr uint64_t kDigestChunkBytes = uint64_t{64} << 20;

// What identifies one version of a file.
struct FileStamp {
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
  std::string Key() const;  // "dev:ino:size:mtime_ns:ctime_ns"
};
// NotFound / IOError naming the file; InvalidArgument when not a regular file.
Result<FileStamp> StampOf(const std::string& path);

struct DigestProgress {
  std::atomic<uint64_t> bytes{0};  // hashed so far
};

// The content digests of `files`, in order. Their chunks are hashed by
// `threads` threads (at least 1), each reading with pread. `low_priority`
// runs them at the lowest CPU priority (nice 19): background work beside
// inference. `cancel` (may be null) stops the work: ResourceExhausted.
// IOError naming the file on a read error, or when a file's stamp changed
// while it was read.
Result<std::vector<Sha256Digest>> DigestFiles(const std::vector<std::string>& files, int threads,
                                              bool low_priority = false, const std::atomic<bool>* cancel = nullptr,
                                              DigestProgress* progress = nullptr);

class WeightsDigestCache {
 public:
  // `path` "" keeps digests in memory only. An unreadable file is logged and
  // replaced (it only caches what can be computed again).
  explicit WeightsDigestCache(std::string path);

  std::optional<Sha256Digest> Lookup(const FileStamp& stamp);
  // Remembers and persists (atomically). At most kMaxEntries are kept, the
  // least recently used going first.
  void Remember(const std::string& file, const FileStamp& stamp, const Sha256Digest& digest);
  size_t size() const;
  const std::string& path() const { return path_; }

  static constexpr size_t kMaxEntries = 4096;

 private:
  struct Entry {
    std::string file;  // informational
    Sha256Digest digest{};
    int64_t used = 0;  // unix seconds of the last lookup or store
  };
  void Load();
  Status Save() const;  // with mu_ held

  std::string path_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;  // by FileStamp::Key()
};

}  // namespace llmhost
