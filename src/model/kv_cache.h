// KV cache in fixed-size blocks, read through per-sequence block tables.
//
// Device memory, per layer: k and v [n_blocks * block_size, kv_dim] f32 (the
// row of position j of a sequence is block_table[j / block_size] *
// block_size + j % block_size). Blocks are reference-counted so that
// sequences can share a prefix (Fork); a write into a shared block first
// copies it (copy-on-write, in Reserve). The paged cache of issue 4 (prefix
// index, eviction) builds on this.
//
// Not thread-safe: the engine's scheduler owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "util/status.h"

namespace llmhost {

inline constexpr int64_t kDefaultKvBlockSize = 256;

// Free list and reference counts of block ids [0, n_blocks).
class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t n_blocks);
  // A free block with reference count 1, or nullopt when none is free.
  std::optional<int32_t> Allocate();
  void Ref(int32_t id);
  // Drops one reference; the block is free again at zero.
  void Unref(int32_t id);
  int32_t refcount(int32_t id) const { return refs_[static_cast<size_t>(id)]; }
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size()); }
  int32_t total_blocks() const { return static_cast<int32_t>(refs_.size()); }

 private:
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
  std::vector<int32_t> refs_;
};

// One sequence's view of the cache. Append-only: positions [0, length) are
// stored; block_table covers at least `length` positions.
struct KvSequence {
  std::vector<int32_t> block_table;
  int64_t length = 0;
};

class KvCache {
 public:
  // Allocates 2 * n_layers buffers of n_blocks * block_size * kv_dim floats.
  static Result<std::unique_ptr<KvCache>> Create(Backend* backend, int64_t n_layers,
                                                 int64_t kv_dim, int64_t block_size,
                                                 int64_t n_blocks);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  int64_t block_size() const { return block_size_; }
  int64_t n_layers() const { return n_layers_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t BlocksFor(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }
  BlockAllocator& allocator() { return alloc_; }
  const BlockAllocator& allocator() const { return alloc_; }
  uint64_t bytes() const { return bytes_; }

  // Device pointers of a layer's K and V rows.
  float* k(int64_t layer) const { return layers_[static_cast<size_t>(layer)].k.as<float>(); }
  float* v(int64_t layer) const { return layers_[static_cast<size_t>(layer)].v.as<float>(); }

  // Blocks that Reserve(seq, new_length) would take from the free list.
  int64_t BlocksNeeded(const KvSequence& seq, int64_t new_length) const;
  // Makes seq able to store positions [seq.length, new_length): appends
  // blocks, and copies the block that position seq.length falls in when
  // another sequence shares it. ResourceExhausted (nothing changed) when the
  // free list is too short.
  Status Reserve(KvSequence* seq, int64_t new_length);
  // A sequence sharing src's first `length` positions (blocks referenced, not copied).
  KvSequence Fork(const KvSequence& src, int64_t length);
  // Drops the sequence's references; it is empty afterwards.
  void Release(KvSequence* seq);

 private:
  struct LayerBuffers {
    DeviceBuffer k, v;
  };
  KvCache(Backend* backend, int64_t n_layers, int64_t kv_dim, int64_t block_size, int32_t n_blocks)
      : backend_(backend), n_layers_(n_layers), kv_dim_(kv_dim), block_size_(block_size),
        alloc_(n_blocks) {}
  void CopyBlock(int32_t from, int32_t to);

  Backend* backend_;
  int64_t n_layers_, kv_dim_, block_size_;
  BlockAllocator alloc_;
  std::vector<LayerBuffers> layers_;
  uint64_t bytes_ = 0;
};

}  // namespace llmhost
