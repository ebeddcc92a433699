// TieredBlockStore: the BlockStore of llmhost serve — a hot RAM tier over a
// cold SSD tier that survives restarts (spec A4, A5; docs/kv-cache.md).
//
// Hot tier: a global LRU of blocks (bytes + meta + dirty flag) under one byte
// budget shared by every model. Write-back (default): a save goes to the hot
// tier, dirty; when the LRU evicts a dirty block it goes to the SSD writer,
// a clean one is dropped. Write-through: a save is also queued for the SSD at
// once (the block stays hot, clean). Under memory pressure (SetPressure) a
// save goes to the SSD only, without a hot copy. Hot-only: no SSD.
//
// SSD tier: <cache_dir>/<first hex digit of the key>/<64 hex key>.safetensors,
// a standard safetensors file holding one tensor "kv" (all layers, the
// layout of block_store.h) and string metadata: format version, block key,
// token count, model fingerprint, model id, layer count, block size, width,
// dtype, created_at and the SHA-256 of the data. Writes go to a temp file in
// the same folder, are fdatasync'ed, then renamed (a crash leaves either the
// old state or the whole file; temp files are deleted at start). A
// background writer (writer_threads threads) drains a bounded queue; a save that finds the queue full
// for `inline_after_s` writes inline (counted); nothing is dropped. Queued
// blocks stay readable (hot → pending writes → disk).
//
// Start: the folders are created, temp files deleted, every file's header
// read to rebuild the index and its LRU order (mtime); unreadable files are
// deleted and counted. The size cap (effective = min(configured, what
// leaves min(5% of the filesystem, 5 GiB) free)) is enforced at start and on
// every save, oldest first, in batches.
//
// Thread-safe. The destructor stops the writer after draining its queue, but
// does not write dirty hot blocks: call Flush first (serve does, on SIGTERM).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "kv/block_store.h"
#include "util/status.h"

namespace llmhost {

struct TieredStoreOptions {
  CacheMode mode = CacheMode::kWriteBack;
  uint64_t hot_max_bytes = 0;        // 0: no hot tier (saves go straight to the SSD writer)
  std::string cache_dir;             // required unless mode is kHotOnly or kOff
  uint64_t ssd_max_bytes = uint64_t{100} << 30;  // configured cap, before the free-space rule
  bool ssd_auto = false;             // cap = (free space + existing cache) / 2, taken at start
  size_t writer_queue_blocks = 32;   // bounded queue of the background writer
  int writer_threads = 2;            // threads draining that queue (hashing + write + fdatasync)
  double inline_after_s = 1.0;       // a save waits this long for queue room, then writes inline
  int load_threads = 4;              // parallel file reads in LoadPrefix
  // Tests only: called on the writing thread (background writer or inline)
  // before each block file is written, e.g. to hold the writer back.
  std::function<void(const BlockKey&)> before_write_for_test;
};

// Counters since start, and the current sizes. Per model (by BlockMeta::model)
// in TierStatsByModel.
struct TierStats {
  uint64_t saves = 0;            // Save calls that stored a new block
  uint64_t duplicate_saves = 0;  // Save calls for a key already held
  uint64_t loads = 0;            // blocks returned by LoadPrefix
  uint64_t hits = 0;             // LoadPrefix calls that returned at least one block
  uint64_t misses = 0;           // LoadPrefix calls that returned none
  uint64_t errors = 0;           // corrupt / unreadable / failed writes and deletes, bad saves
  uint64_t hot_hits = 0, hot_evictions = 0, hot_promotions = 0;
  uint64_t pending_hits = 0;     // blocks served from the writer's queue
  uint64_t ssd_hits = 0, ssd_writes = 0, ssd_evictions = 0;
  uint64_t inline_writes = 0;    // queue full: written on the saving thread
  uint64_t dropped_saves = 0;    // hot-only saves with no room (pressure, block over the budget)
  uint64_t hot_bytes = 0, hot_blocks = 0;
  uint64_t pending_bytes = 0, pending_blocks = 0;
  uint64_t ssd_bytes = 0, ssd_files = 0;
  uint64_t hot_max_bytes = 0;
  uint64_t ssd_max_bytes = 0;            // configured
  uint64_t ssd_effective_max_bytes = 0;  // after the free-space rule
  bool ssd_writable = true;              // false: the folder was read-only at start
};

class TieredBlockStore final : public BlockStore {
 public:
  // InvalidArgument for bad options; IOError naming the folder when the
  // cache dir cannot be created or read.
  static Result<std::unique_ptr<TieredBlockStore>> Open(TieredStoreOptions options);
  ~TieredBlockStore() override;

  void Save(const BlockMeta& meta, std::vector<uint8_t> data) override;
  std::vector<BlockBytes> LoadPrefix(std::span<const BlockMeta> want) override;
  bool Contains(const BlockKey& key) const override;

  // Writes every dirty hot block to the SSD and waits for the writer's
  // queue to drain; ResourceExhausted ("flush deadline exceeded", saying
  // what is left) after timeout_s. OK at once without an SSD tier.
  Status Flush(double timeout_s);
  // Under memory pressure saves skip the hot tier (write-through to SSD;
  // hot-only: the save is dropped, counted).
  void SetPressure(bool under_pressure);
  // Evicts hot blocks (LRU first; dirty ones to the writer) until the hot
  // tier holds at most target_bytes. Returns the bytes it released.
  uint64_t ShrinkHot(uint64_t target_bytes);
  // Drops every hot block (dirty ones go to the SSD writer first).
  void ClearHot();
  // Deletes every block file (and queued writes). Returns the files deleted.
  uint64_t ClearSsd();

  // RAM held by the store: hot blocks + blocks queued for writing.
  uint64_t ram_bytes() const;
  TierStats stats() const;
  std::map<std::string, TierStats> stats_by_model() const;
  const TieredStoreOptions& options() const;

 private:
  struct Impl;
  explicit TieredBlockStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The safetensors file of one block (exposed for tests, the fuzz target and
// tools). EncodeBlockFile returns header + data; DecodeBlockFile checks the
// header, the sizes and the data's SHA-256 and fills meta and data;
// InvalidArgument (malformed header, wrong shape or size) or Corruption
// (checksum mismatch) says what is wrong.
std::vector<uint8_t> EncodeBlockFile(const BlockMeta& meta, std::span<const uint8_t> data);
Status DecodeBlockFile(std::span<const uint8_t> file, BlockMeta* meta, std::vector<uint8_t>* data);
// Reads only the header (the startup scan): meta, and the data's size.
Status DecodeBlockFileHeader(std::span<const uint8_t> head, BlockMeta* meta, uint64_t* header_bytes);

}  // namespace llmhost
