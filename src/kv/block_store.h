// BlockStore: where full KV blocks go when the paged cache may reuse their
// memory, and where a prefix lookup finds them again — across requests,
// model unloads and (with the SSD tier) server restarts.
//
// A block's bytes are the K and V rows of every layer for block_size
// positions, one contiguous buffer laid out [2][n_layers][block_size][kv_dim]
// (K of every layer, then V of every layer), dtype `dtype` (the paged
// cache's: F32 today). Its key (kv/prefix_cache.h) names the whole prefix up
// to the end of the block for one model fingerprint, so a key never matches
// another model's or another layout's block.
//
// The prefix cache (one per engine, on its executor thread) calls Save for
// each full block it indexes and LoadPrefix for the blocks its own index
// misses; one store is shared by every engine, so every method is
// thread-safe. The implementation with a hot RAM tier and an SSD tier is
// kv/tiered_block_store.h; tests use small fakes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/sha256.h"
#include "util/status.h"

namespace llmhost {

using BlockKey = Sha256Digest;

// What a block is, as stored in the file header and checked on load.
struct BlockMeta {
  BlockKey key{};
  Sha256Digest fingerprint{};  // the model fingerprint its key chain starts from
  std::string model;           // the model's id (stats per model, file header); informational
  int64_t token_count = 0;     // positions held (= block_size: only full blocks are stored)
  int64_t n_layers = 0;
  int64_t block_size = 0;
  int64_t kv_dim = 0;          // a split model's: all ranks' (its data is their shards in rank order)
  std::string dtype = "F32";   // safetensors dtype name of the data

  // 2 × n_layers × block_size × kv_dim × the dtype's size (0 for an unknown dtype).
  uint64_t data_bytes() const;
  // Same fingerprint, layer count, block size, width, dtype and token count
  // (the key is compared separately).
  bool SameShape(const BlockMeta& other) const;
};

// A block's bytes, shared between the tiers and a reader without copying.
using BlockBytes = std::shared_ptr<const std::vector<uint8_t>>;

class BlockStore {
 public:
  virtual ~BlockStore() = default;

  // Keeps the block (data.size() must equal meta.data_bytes(); otherwise it
  // is ignored and counted as an error). A key already held is only marked
  // recently used. Returns quickly: disk writes happen on a background
  // writer (or, when its queue stays full, inline).
  virtual void Save(const BlockMeta& meta, std::vector<uint8_t> data) = 0;

  // The longest leading run of `want` (consecutive blocks of one prefix, in
  // order) that the store holds and that validates: key, fingerprint and
  // shape equal to the wanted meta's (model names may differ), and for
  // files the checksum and sizes. Stops at the first miss. Reads from disk
  // may run on several threads; blocks read from disk are promoted to the
  // hot tier as clean. A corrupt, truncated or missing file is counted,
  // removed from the index (and the disk) and is a miss — never an error for
  // the caller and never wrong data.
  virtual std::vector<BlockBytes> LoadPrefix(std::span<const BlockMeta> want) = 0;

  // Whether the store holds `key` in some tier (no I/O, no validation).
  virtual bool Contains(const BlockKey& key) const = 0;
};

// Where saves go. Parsed from --cache-mode.
enum class CacheMode {
  kWriteBack,     // saves go to RAM, dirty; evicted dirty blocks are written to SSD
  kWriteThrough,  // saves go to RAM and to SSD at once
  kHotOnly,       // RAM only: what the hot tier evicts is lost
  kOff,           // no store at all (the paged cache's own prefix index remains)
};
// "write-back" | "write-through" | "hot-only" | "off"; InvalidArgument listing them.
Result<CacheMode> ParseCacheMode(std::string_view text);
const char* CacheModeName(CacheMode mode);

}  // namespace llmhost
