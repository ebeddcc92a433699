// KV cache in fixed-size blocks, read through per-sequence block tables.
//
// Device memory, per layer: k and v [n_blocks * block_size, kv_dim] of the
// cache's element type, F32, BF16 or F16 (the row of position j of a
// sequence is block_table[j / block_size] * block_size + j % block_size). Blocks are reference-counted so that
// sequences can share a prefix (Fork); a write into a shared block first
// copies it (copy-on-write, in Reserve). The prefix index of src/kv keys
// full blocks by their tokens and finds them again, even after release, until
// the allocator hands them out for new contents.
//
// Not thread-safe: the engine's scheduler owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "util/status.h"

namespace llmhost {

inline constexpr int64_t kDefaultKvBlockSize = 256;

// "--kv-dtype" values: f32, bf16, f16, fp8 (also fp8_e4m3: F8_E4M3, saturating
// at +-448, no scale), or auto (nullopt: the model's own
// 16-bit type, Model::Native16BitType). InvalidArgument otherwise.
Result<std::optional<DType>> ParseKvDtype(std::string_view text);
// "f32", "bf16", "f16", "fp8".
const char* KvDtypeName(DType t);

// Free list and reference counts of block ids [0, total_blocks()), out of
// [0, max_blocks()): the cache can grow into more ids (Grow) and give the
// top ones back (ShrinkTo).
//
// The free list is in LRU order: Allocate() takes the block freed longest
// ago, Unref() to zero appends at the back. A free block keeps its contents
// until it is allocated again, so a prefix index (src/kv) may keep pointing
// at it: Ref() on a free block takes it off the free list again ("revives"
// it), and the allocate hook tells the index when a block is handed out for
// new contents (or leaves with ShrinkTo).
class BlockAllocator {
 public:
  // `usable` < 0: all of them.
  explicit BlockAllocator(int32_t max_blocks, int32_t usable = -1);
  // The least recently freed block with reference count 1, or nullopt when
  // none is free. Calls the allocate hook with the id first.
  std::optional<int32_t> Allocate();
  // Adds a reference; a free block (count 0) leaves the free list.
  void Ref(int32_t id);
  // Drops one reference; the block is free again at zero.
  void Unref(int32_t id);
  int32_t refcount(int32_t id) const { return refs_[static_cast<size_t>(id)]; }
  int32_t free_blocks() const { return n_free_; }
  int32_t total_blocks() const { return usable_; }
  int32_t max_blocks() const { return static_cast<int32_t>(refs_.size()); }
  // Ids [total, total + n) become usable, at the front of the free list:
  // fresh blocks are handed out before cached ones are evicted.
  void Grow(int32_t n);
  // Gives back ids [usable, total): each must be unreferenced; they leave the
  // free list (the allocate hook sees each, so an index forgets them). False,
  // and nothing changed, when one of them is referenced.
  bool ShrinkTo(int32_t usable);
  // The highest referenced id, -1 when none.
  int32_t HighestReferenced() const;
  // Called with a block's id whenever Allocate() hands it out (its old
  // contents are about to be overwritten). Empty to remove.
  void set_allocate_hook(std::function<void(int32_t)> hook) { hook_ = std::move(hook); }

 private:
  void PushBack(int32_t id);
  void PushFront(int32_t id);
  void Unlink(int32_t id);

  std::vector<int32_t> refs_;
  // Intrusive doubly linked free list; kNone ends it. in_free_ marks members.
  static constexpr int32_t kNone = -1;
  std::vector<int32_t> prev_, next_;
  std::vector<uint8_t> in_free_;
  int32_t head_ = kNone, tail_ = kNone, n_free_ = 0;
  int32_t usable_ = 0;
  std::function<void(int32_t)> hook_;
};

// One sequence's view of the cache. Append-only: positions [0, length) are
// stored; block_table covers at least `length` positions.
struct KvSequence {
  std::vector<int32_t> block_table;
  int64_t length = 0;
};

class KvCache {
 public:
  // Reserves 2 * n_layers buffers of max_blocks * block_size * kv_dim
  // elements of `dtype` (F32, BF16 or F16; InvalidArgument otherwise) and
  // commits the first n_blocks (max_blocks 0: n_blocks, a fixed cache).
  // Memory is held only for committed blocks: Grow and ShrinkTo move the
  // line, in chunks of blocks_per_chunk(), without moving any address.
  static Result<std::unique_ptr<KvCache>> Create(Backend* backend, int64_t n_layers,
                                                 int64_t kv_dim, int64_t block_size,
                                                 int64_t n_blocks, DType dtype = DType::kF32,
                                                 int64_t max_blocks = 0);
  // A tensor-parallel model's cache: one shard per backend (rank), each
  // holding kv_dim columns (its KV heads) of every position, all sharing one
  // allocator and one block table per sequence.
  static Result<std::unique_ptr<KvCache>> Create(std::span<Backend* const> ranks, int64_t n_layers,
                                                 int64_t kv_dim, int64_t block_size,
                                                 int64_t n_blocks, DType dtype = DType::kF32,
                                                 int64_t max_blocks = 0);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  int64_t block_size() const { return block_size_; }
  int64_t n_layers() const { return n_layers_; }
  int64_t kv_dim() const { return kv_dim_; }  // of one rank's rows
  int64_t ranks() const { return static_cast<int64_t>(backends_.size()); }
  int64_t BlocksFor(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }
  BlockAllocator& allocator() { return alloc_; }
  const BlockAllocator& allocator() const { return alloc_; }
  // Committed bytes (all layers, K and V, every rank).
  uint64_t bytes() const { return static_cast<uint64_t>(alloc_.total_blocks()) * block_bytes(); }
  uint64_t max_bytes() const { return static_cast<uint64_t>(alloc_.max_blocks()) * block_bytes(); }
  DType dtype() const { return dtype_; }
  // The commit unit: blocks whose per-layer bytes fill whole pages of the backend.
  int64_t blocks_per_chunk() const { return chunk_blocks_; }
  // Commits at least `blocks` more (rounded up to chunks, capped at
  // max_blocks); returns the blocks added (0 at the cap), or the backend's
  // ResourceExhausted (nothing changed).
  Result<int64_t> Grow(int64_t blocks);
  // Decommits the top blocks down to `blocks` (rounded up to a chunk, and
  // never below the highest referenced block); cached contents there are
  // forgotten. Returns the blocks given back.
  int64_t ShrinkTo(int64_t blocks);
  // Bytes of K and V of one position over every layer (and rank).
  uint64_t bytes_per_token() const {
    return 2 * static_cast<uint64_t>(n_layers_ * kv_dim_ * ranks()) * DTypeSize(dtype_);
  }

  // Device pointers of a layer's K and V rows on a rank (elements of dtype()).
  void* k(int64_t layer, int64_t rank = 0) const { return buffers(layer, rank).k.data; }
  void* v(int64_t layer, int64_t rank = 0) const { return buffers(layer, rank).v.data; }

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

  // One block of every layer as host bytes, laid out [ranks][2][n_layers]
  // [block_size][kv_dim] of dtype() (per rank: K of every layer, then V; a
  // one-rank cache is [2][n_layers]...): the unit the KV block store
  // (kv/block_store.h) saves and restores, every rank's shard in it.
  uint64_t block_bytes() const;
  // out: block_bytes(); not OK when the device failed (then `out` is garbage).
  Status ReadBlock(int32_t id, uint8_t* out) const;
  void WriteBlock(int32_t id, const uint8_t* in);    // in: block_bytes()
  // (ReadBlock and WriteBlock of distinct blocks may run on several threads at once.)

 private:
  struct LayerBuffers {
    DeviceBuffer k, v;
  };
  KvCache(std::span<Backend* const> ranks, int64_t n_layers, int64_t kv_dim, int64_t block_size, int32_t max_blocks,
          DType dtype)
      : backends_(ranks.begin(), ranks.end()), n_layers_(n_layers), kv_dim_(kv_dim), block_size_(block_size),
        dtype_(dtype), alloc_(max_blocks, 0) {}
  const LayerBuffers& buffers(int64_t layer, int64_t rank) const {
    return layers_[static_cast<size_t>(rank * n_layers_ + layer)];
  }
  Backend* backend_of(size_t index) const { return backends_[index / static_cast<size_t>(n_layers_)]; }
  Status CommitRange(int64_t from_block, int64_t to_block);  // all layers; undone on failure
  void DecommitRange(int64_t from_block, int64_t to_block);
  size_t layer_block_bytes() const { return static_cast<size_t>(block_size_ * kv_dim_) * DTypeSize(dtype_); }
  void CopyBlock(int32_t from, int32_t to);

  std::vector<Backend*> backends_;  // per rank
  int64_t n_layers_, kv_dim_, block_size_;
  DType dtype_;
  BlockAllocator alloc_;
  std::vector<LayerBuffers> layers_;  // [rank][layer]
  int64_t chunk_blocks_ = 1;
};

}  // namespace llmhost
