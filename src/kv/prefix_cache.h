// PrefixCache: finds the KV blocks of earlier sequences by their tokens, so
// that a prompt starting like an earlier one prefills only the rest.
//
// Every full block of a sequence gets a key: SHA-256 over (parent key, the
// block's token ids), the first block's parent being the model fingerprint
// (kv/fingerprint.h). A key therefore names the whole prefix up to the end
// of its block, for one model, KV layout and block size. The index maps
// key -> block id. Only full blocks are indexed (a full block is never
// written again, except by the exact-hit recompute below, which rewrites a
// position with the value it already holds).
//
// Blocks released by every sequence go to the allocator's LRU free list and
// stay in the index until the allocator hands them out again (its allocate
// hook removes the key): a later request revives them by taking a reference.
// Lookups walk the prompt's full blocks and stop at the first miss.
//
//   PrefixCache pc(cache, fingerprint);
//   CachedSequence s;  s.tokens = prompt;
//   pc.Acquire(&s);                 // s.kv.length positions are already there
//   ... Forward(tokens [s.kv.length, ...)) ...; pc.Publish(&s);
//   pc.Release(&s);                 // blocks stay findable until reused
//
// With a BlockStore attached (kv/block_store.h: the hot RAM and SSD tiers),
// every block Publish indexes is also saved there, and Acquire continues a
// walk that misses in the index with the store: blocks it still holds
// (after their paged block was reused, the model unloaded or the server
// restarted) are copied into fresh paged blocks and indexed again.
//
// The store outlives the weights, so its keys start from the fingerprint of
// the full weights identity (every byte hashed, kv/fingerprint.h), which may
// become known only after the engine started (kv/weights_hasher.h). A store
// key is SHA-256 over (that fingerprint, the index key). Until the store
// fingerprint is known the store is not used at all; when it becomes known,
// every block indexed meanwhile is saved.
//
// A save copies a block out (megabytes for a large model) and hands it to the
// store: a BlockSaver thread (kv/block_saver.h) does both while the block is
// referenced for it; ReapSaves drops those references on the executor.
//
// A restore reads files and copies megabytes; the scheduler runs it in the
// background (Acquire with RestoreMode::kBackground): the blocks are taken
// from the free list at once, filled on a restore thread while the other
// requests keep stepping, and indexed by FinishRestore on the executor.
//
// Not thread-safe: the engine's executor thread owns it (and the KvCache),
// except CachedPrefixBlocks, which any thread may call (the prefill guard
// prices a prompt's uncached part before the request reaches the engine).
// A restore thread writes only the blocks its restore took; the saver
// thread only reads the blocks it was given.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kv/block_saver.h"
#include "kv/block_store.h"
#include "model/kv_cache.h"
#include "util/sha256.h"

namespace llmhost {

struct PrefixRestore;  // a restore from the store in flight (prefix_restore.cpp)

// A sequence together with the tokens it stands for and their block keys.
struct CachedSequence {
  KvSequence kv;                // positions [0, kv.length) are stored
  std::vector<int32_t> tokens;  // every token of the sequence (stored or still to run)
  std::vector<BlockKey> keys;   // chain keys of the first keys.size() full blocks of tokens
  size_t published = 0;         // blocks [0, published) are indexed (or were duplicates)
  std::shared_ptr<PrefixRestore> restore;  // set while a background restore fills its next blocks
  bool restoring() const { return restore != nullptr; }
};

enum class RestoreMode {
  kInline,      // Acquire returns with the restored blocks in place
  kBackground,  // Acquire takes the blocks, a restore thread fills them (FinishRestore merges)
};

struct PrefixCacheStats {
  uint64_t lookups = 0;        // RecordLookup calls (admissions)
  uint64_t hits = 0;           // ... that reused at least one block
  uint64_t misses = 0;         // ... that reused none
  uint64_t hit_blocks = 0;     // blocks reused in total
  uint64_t cached_tokens = 0;  // positions reused in total (not recomputed)
  uint64_t evictions = 0;      // indexed blocks handed out for new contents
  uint64_t store_saves = 0;    // blocks handed to the block store
  uint64_t store_restored = 0; // blocks copied back from the block store
  bool store_ready = false;    // a store is attached and its fingerprint known
  int64_t blocks_total = 0;
  int64_t blocks_used = 0;     // referenced by a sequence
  int64_t blocks_free = 0;     // on the free list (cached ones included)
  int64_t blocks_cached = 0;   // free, yet still findable by key
  int64_t blocks_indexed = 0;  // findable by key (used or free)
};

class PrefixCache {
 public:
  // `cache` must outlive this object; installs the allocator's allocate hook
  // (removed again by the destructor).
  PrefixCache(KvCache* cache, const Sha256Digest& model_fingerprint);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The store fingerprint: known, still pending, or never (its weights could
  // not be hashed). Thread-safe; called until it is known or never.
  struct StoreFingerprint {
    bool never = false;
    std::optional<Sha256Digest> fingerprint;
  };
  using StoreFingerprintFn = std::function<StoreFingerprint()>;

  // Saves published blocks to `store` and restores from it (null: none),
  // from when `store_fingerprint` answers. `model_id` names the model in the
  // store's stats and files.
  void AttachStore(std::shared_ptr<BlockStore> store, std::string model_id, StoreFingerprintFn store_fingerprint);
  // How a restore makes room beyond the free list (the scheduler's growth of
  // a growing cache): asked for the blocks a restore wants; true when they
  // are free. Unset: the free list is all there is.
  void set_grower(std::function<bool(int64_t blocks)> grow) { grow_ = std::move(grow); }

  // Called on a restore thread when its restore is done (the engine wakes
  // its executor). Set before the first Acquire.
  void set_restore_done_hook(std::function<void()> hook) { restore_done_hook_ = std::move(hook); }

  // Whether the store is in use (its fingerprint known). Thread-safe.
  bool store_ready() const { return store_ready_.load(std::memory_order_acquire); }
  // A store waits for its fingerprint, or for the blocks indexed meanwhile
  // to be saved (executor thread): call PollStore now and then.
  bool store_pending() const { return store_ && !store_caught_up_ && !store_never_.load(); }
  void PollStore() { StoreActive(); }

  KvCache& cache() { return *cache_; }
  int64_t block_size() const { return cache_->block_size(); }

  // The key of a block of tokens following `parent` (the fingerprint for the
  // first block).
  BlockKey KeyOf(const BlockKey& parent, std::span<const int32_t> block_tokens) const;
  // Computes the keys of every full block of seq->tokens not keyed yet.
  void ExtendKeys(CachedSequence* seq) const;

  // For an empty seq->kv: takes references on the longest run of cached full
  // blocks that starts seq->tokens and sets seq->kv to them. kv.length is the
  // positions reused: matched blocks × block size, or one less when they cover
  // every token (the last token is run again to get its logits). Returns
  // kv.length. Counts nothing: the caller reports a lookup it goes ahead
  // with through RecordLookup (an admission may be undone by Release).
  // Blocks the index misses and the store holds are restored into fresh
  // blocks: at once (kInline), or, with kBackground, on a restore thread:
  // seq->restoring() turns true, kv covers only the index's blocks, and the
  // caller calls FinishRestore once RestoreDone. A request whose next block
  // a running restore already loads waits for that one instead.
  int64_t Acquire(CachedSequence* seq, RestoreMode mode = RestoreMode::kInline);
  // Whether seq's background restore has finished (any thread may have
  // written its blocks; nothing is merged yet). False when none is running.
  bool RestoreDone(const CachedSequence& seq) const;
  // Waits for seq's restore (merging it into the index if no one has), then
  // takes the blocks it restored. When they left more of the store's run to
  // restore (the free list was short, or seq followed another request's
  // shorter restore), starts the next one: seq->restoring() again. Returns
  // kv.length.
  int64_t FinishRestore(CachedSequence* seq);
  // Merges every finished restore into the index, those whose sequences
  // were released while they ran included (their blocks, written to the
  // end, are freed and stay findable).
  void ReapRestores();
  // Drops the references of blocks whose save is done (they may be reused).
  void ReapSaves();
  // Blocks handed to the saver and not reaped yet.
  size_t saves_in_flight() const { return saver_ ? saver_->in_flight() : 0; }
  // Waits until every handed-over block is in the store, then reaps them.
  void WaitForSaves();
  void RecordLookup(const CachedSequence& seq);

  // Indexes the full blocks of seq->kv not yet indexed (call after each
  // forward step that stored tokens; seq->tokens must cover kv.length). A key
  // already indexed for another block is left pointing there.
  void Publish(CachedSequence* seq);

  // Drops the sequence's references (its indexed blocks stay findable until
  // reused; a running restore is left to finish and reaped later) and clears
  // kv and published; tokens and keys are kept (they
  // depend only on the tokens, which a sequence only appends to).
  void Release(CachedSequence* seq);

  // Forgets every key (e.g. after a step failed in a way that may have left
  // blocks half written). Blocks and references are untouched.
  void Clear();

  // How many leading full blocks of `tokens` are findable now, in the index
  // or the attached store (no references taken, no stats counted, no I/O).
  // Thread-safe.
  int64_t CachedPrefixBlocks(std::span<const int32_t> tokens) const;

  PrefixCacheStats stats() const;

 private:
  void OnAllocate(int32_t id);
  void Unindex(int32_t id);
  void Index(int32_t id, const BlockKey& key);
  // Takes references on the indexed blocks that continue seq->kv.
  void WalkIndex(CachedSequence* seq);
  // For the keys after seq's blocks that the store holds: restores them
  // (inline), or sets seq->restore to a background restore, a running one
  // that covers the next key or a new one.
  void RestoreNext(CachedSequence* seq, RestoreMode mode);
  // A restore of keys [from, ...) of seq: fresh blocks for the leading run
  // the store holds (as many as the free list allows, after growing); null
  // when the store does not hold keys[from] or no block is free.
  std::shared_ptr<PrefixRestore> StartRestore(const CachedSequence& seq, size_t from);
  // Loads the blocks and copies them into the restore's blocks (any thread).
  void RunRestore(PrefixRestore* r);
  // Indexes the blocks the restore filled and frees every block it took
  // (they stay findable: the sequences waiting for it take them from the
  // index), once.
  void MergeRestore(PrefixRestore* r);
  void SetLengthFromBlocks(CachedSequence* seq) const;
  void Launch(const std::shared_ptr<PrefixRestore>& r);  // starts its thread
  void WaitForRestores();                                // joins every restore thread
  void SaveToStore(int32_t id, const BlockKey& key);
  // For an index key: the store's meta (its key under the store fingerprint).
  BlockMeta StoreMetaOf(const BlockKey& index_key) const;
  BlockKey StoreKeyOf(const BlockKey& index_key) const;
  // True once the store may be used; the first time (executor thread), saves
  // every block indexed so far.
  bool StoreActive();
  bool PollStoreFingerprint() const;  // any thread

  struct KeyHash {
    size_t operator()(const BlockKey& k) const {
      size_t h = 0;
      for (int i = 0; i < 8; ++i) h = (h << 8) | k[static_cast<size_t>(i)];
      return h;
    }
  };

  KvCache* cache_;
  Sha256Digest fingerprint_;
  BlockKey root_;
  std::shared_ptr<BlockStore> store_;
  std::string model_id_;
  std::function<bool(int64_t)> grow_;
  std::function<void()> restore_done_hook_;
  // Background restores not merged yet (sequences wait for them, or were released).
  std::vector<std::shared_ptr<PrefixRestore>> restores_;
  StoreFingerprintFn store_fingerprint_fn_;
  mutable std::mutex store_fp_mu_;
  mutable std::atomic<bool> store_ready_{false};  // store_fp_ is set (written once, before the flag)
  mutable std::atomic<bool> store_never_{false};
  mutable Sha256Digest store_fp_{};
  bool store_caught_up_ = false;  // executor thread: the blocks indexed before were saved
  // Written only by the executor thread, under index_mu_; read there without
  // it, and elsewhere (CachedPrefixBlocks) with it.
  mutable std::mutex index_mu_;
  std::unordered_map<BlockKey, int32_t, KeyHash> index_;
  std::vector<BlockKey> key_of_;    // per block id: its key when indexed
  std::vector<uint8_t> indexed_;    // per block id: 1 when key_of_ is valid
  PrefixCacheStats counters_;
  std::unique_ptr<BlockSaver> saver_;  // started by the first save
  std::unordered_set<BlockKey, KeyHash> saving_;  // store keys handed to saver_, not reaped
};

}  // namespace llmhost
