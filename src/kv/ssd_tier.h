// The SSD tier: one block file per key under <dir>/<first hex>/<key>.safetensors,
// an in-memory index with LRU order, a size cap, and background writer
// threads fed by a bounded queue. Blocks handed to it stay readable from the
// pending-write buffer until their file is complete. Thread-safe; its mutex
// is taken under the hot tier's, never the other way round, and is not held
// while block data is read or written (only for unlink/rename-sized work).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kv/block_file.h"
#include "kv/block_store.h"
#include "kv/tier_stats_book.h"

namespace llmhost {

struct SsdTierOptions {
  std::string dir;
  uint64_t max_bytes = 0;  // configured cap
  bool auto_size = false;  // cap = (free + existing) / 2 at start
  size_t queue_blocks = 32;
  int writer_threads = 1;
  double inline_after_s = 1.0;
  std::function<void(const BlockKey&)> before_write;  // tests
};

class SsdTier {
 public:
  // Creates the folders, removes temp files, scans the block files (the
  // unreadable ones are deleted and counted), enforces the cap, starts the
  // writer.
  static Result<std::unique_ptr<SsdTier>> Open(SsdTierOptions options, TierStatsBook* stats);
  ~SsdTier();  // drains the queue, stops the writer

  // Registers a block for writing; readable from the pending buffer at once.
  // Cheap, no I/O, never blocks. False (and the file marked used) when the
  // key is already on disk or pending.
  bool AddPending(const BlockMeta& meta, BlockBytes data);
  // Hands a registered block to the writer; waits up to inline_after_s for
  // queue room, then writes it on this thread (counted).
  void Submit(const BlockKey& key);
  void Write(const BlockMeta& meta, BlockBytes data) {
    if (AddPending(meta, std::move(data))) Submit(meta.key);
  }

  bool Contains(const BlockKey& key) const;
  // Marks an indexed file most recently used (and refreshes its mtime).
  void Touch(const BlockKey& key);
  // The queued bytes of `want` when pending with the same key and shape.
  BlockBytes FindPending(const BlockMeta& want) const;
  bool Indexed(const BlockKey& key) const;
  // Reads and validates the file of `want`. A missing, corrupt or
  // mismatching file is removed (index and disk) and counted: null.
  BlockBytes Read(const BlockMeta& want);
  // Blocks of fingerprints noted since start are evicted after the others.
  void NoteFingerprint(const Sha256Digest& fingerprint);

  // Waits until nothing is pending; the number still pending.
  size_t WaitIdle(std::chrono::steady_clock::time_point deadline);
  // Deletes every file and every queued write; the files deleted.
  uint64_t Clear();

  uint64_t pending_bytes() const;
  uint64_t configured_max_bytes() const { return configured_max_; }
  // Whether a file could be created in the folder at start (a read-only
  // filesystem still serves the blocks it holds; saves fail).
  bool writable() const { return writable_; }
  uint64_t effective_max_bytes() const;
  uint64_t bytes() const;

 private:
  struct FileEntry {
    uint64_t bytes = 0;
    std::string model;
    Sha256Digest fingerprint{};
    uint64_t seq = 0;  // identifies this file among rewrites of the key
    std::list<BlockKey>::iterator lru;
  };
  struct Pending {
    BlockMeta meta;
    BlockBytes data;
    enum State { kWaiting, kQueued, kWriting } state = kWaiting;
    bool cancelled = false;  // Clear() ran while it was written: delete the file
  };

  SsdTier(SsdTierOptions options, TierStatsBook* stats);
  Status Scan();
  void WriterLoop();
  void WriteOne(const BlockKey& key);
  std::string PathOf(const BlockKey& key) const;
  // Free-space rule; call without mu_ (statvfs), apply under it.
  uint64_t FreeSpaceCap() const;
  // Under mu_: evicts files (stale fingerprints first, then LRU) so that
  // `incoming` more bytes fit under `cap`, down to 90% of it.
  void EvictForLocked(uint64_t incoming, uint64_t cap);
  void EraseFileLocked(const BlockKey& key, bool eviction);
  void InsertIndexLocked(const BlockKey& key, FileEntry entry, bool most_recent);
  void ErasePendingLocked(const BlockKey& key);

  SsdTierOptions options_;
  TierStatsBook* stats_;
  uint64_t configured_max_ = 0;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;     // writer: queue not empty / stop
  std::condition_variable changed_cv_;  // queue room, writes finished
  std::unordered_map<BlockKey, FileEntry, BlockKeyHash> index_;
  std::list<BlockKey> lru_;  // front: least recently used
  std::unordered_map<BlockKey, Pending, BlockKeyHash> pending_;
  std::deque<BlockKey> queue_;
  std::set<Sha256Digest> used_fingerprints_;
  uint64_t total_bytes_ = 0, reserved_bytes_ = 0, pending_bytes_ = 0;
  uint64_t effective_max_ = 0;
  bool writable_ = true;
  uint64_t next_seq_ = 1;
  bool stop_ = false;
  std::vector<std::thread> writers_;
};

}  // namespace llmhost
