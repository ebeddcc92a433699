// PrefixCache's restores from the block store: blocks taken on the executor,
// filled from the store (RAM or files) inline or on a restore thread, merged
// into the index on the executor, and taken from there by the sequences
// that wait for them.
#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "kv/prefix_cache.h"

namespace llmhost {

namespace {
// Threads that copy restored blocks into the paged cache (KvCache::WriteBlock
// of distinct blocks may run concurrently): a restore is bound by memory
// bandwidth, which one core does not reach.
constexpr size_t kCopyThreads = 4;
}  // namespace

struct PrefixRestore {
  std::vector<BlockKey> keys;    // index keys of the blocks restored, in chain order
  std::vector<BlockMeta> want;   // their store metas
  std::vector<int32_t> ids;      // the blocks taken for them (referenced by the restore)
  size_t filled = 0;             // leading blocks loaded and written (valid once done)
  std::atomic<bool> done{false};
  bool merged = false;           // executor thread: indexed, blocks freed
  std::thread thread;
};

void PrefixCache::RestoreNext(CachedSequence* seq, RestoreMode mode) {
  const size_t from = seq->kv.block_table.size();
  if (from >= seq->keys.size() || !StoreActive()) return;
  if (mode == RestoreMode::kBackground) {
    // The same prefix asked for again while it is read: wait for that read.
    for (const std::shared_ptr<PrefixRestore>& r : restores_) {
      if (!r->merged && std::find(r->keys.begin(), r->keys.end(), seq->keys[from]) != r->keys.end()) {
        seq->restore = r;
        return;
      }
    }
  }
  std::shared_ptr<PrefixRestore> r = StartRestore(*seq, from);
  if (!r) return;
  if (mode == RestoreMode::kInline) {
    RunRestore(r.get());
    MergeRestore(r.get());
    WalkIndex(seq);
    return;
  }
  Launch(r);
  seq->restore = std::move(r);
}

std::shared_ptr<PrefixRestore> PrefixCache::StartRestore(const CachedSequence& seq, size_t from) {
  const size_t n = seq.keys.size() - from;
  if (!store_->Contains(StoreKeyOf(seq.keys[from]))) return nullptr;  // the common miss: no I/O
  // At most what the free list holds (after growing the cache, if it can);
  // the rest of the prompt is prefilled.
  if (grow_) grow_(static_cast<int64_t>(n));
  BlockAllocator& alloc = cache_->allocator();
  const size_t room = static_cast<size_t>(std::max<int32_t>(alloc.free_blocks(), 0));
  auto r = std::make_shared<PrefixRestore>();
  for (size_t i = from; i < from + n && r->want.size() < room; ++i) {
    BlockMeta meta = StoreMetaOf(seq.keys[i]);
    if (!store_->Contains(meta.key)) break;  // no block is taken that the load would stop before
    r->want.push_back(std::move(meta));
    r->keys.push_back(seq.keys[i]);
  }
  for (size_t j = 0; j < r->want.size(); ++j) {
    const std::optional<int32_t> id = alloc.Allocate();  // may evict an unreferenced cached block
    if (!id) break;
    r->ids.push_back(*id);
  }
  if (r->ids.empty()) return nullptr;
  r->want.resize(r->ids.size());
  r->keys.resize(r->ids.size());
  return r;
}

void PrefixCache::RunRestore(PrefixRestore* r) {
  const std::vector<BlockBytes> got = store_->LoadPrefix(r->want);
  size_t valid = 0;
  while (valid < got.size() && valid < r->ids.size() && got[valid] && got[valid]->size() == cache_->block_bytes()) {
    ++valid;
  }
  const size_t n_threads = std::min(kCopyThreads, valid);
  std::atomic<size_t> next{0};
  auto copy = [&] {
    for (size_t j; (j = next.fetch_add(1)) < valid;) cache_->WriteBlock(r->ids[j], got[j]->data());
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n_threads; ++t) threads.emplace_back(copy);
  copy();
  for (std::thread& t : threads) t.join();
  r->filled = valid;
}

void PrefixCache::Launch(const std::shared_ptr<PrefixRestore>& r) {
  restores_.push_back(r);
  PrefixRestore* raw = r.get();  // restores_ keeps it alive until its thread is joined
  r->thread = std::thread([this, raw] {
    RunRestore(raw);
    raw->done.store(true, std::memory_order_release);
    if (restore_done_hook_) restore_done_hook_();
  });
}

void PrefixCache::MergeRestore(PrefixRestore* r) {
  if (r->merged) return;
  if (r->thread.joinable()) r->thread.join();
  BlockAllocator& alloc = cache_->allocator();
  for (size_t j = 0; j < r->ids.size(); ++j) {
    const int32_t id = r->ids[j];
    // An unfilled block is freed unindexed. A filled one is indexed unless
    // another request computed the same block meanwhile (that one stays).
    if (j < r->filled) {
      ++counters_.store_restored;
      if (!index_.count(r->keys[j])) Index(id, r->keys[j]);
    }
    alloc.Unref(id);  // free; the waiting sequences revive it from the index
  }
  r->ids.clear();
  r->merged = true;
}

bool PrefixCache::RestoreDone(const CachedSequence& seq) const {
  return seq.restore && seq.restore->done.load(std::memory_order_acquire);
}

int64_t PrefixCache::FinishRestore(CachedSequence* seq) {
  if (std::shared_ptr<PrefixRestore> r = std::move(seq->restore)) {
    MergeRestore(r.get());
    restores_.erase(std::remove(restores_.begin(), restores_.end(), r), restores_.end());
    const size_t before = seq->kv.block_table.size();
    WalkIndex(seq);
    // More of the run may be in the store; go on only while restores make
    // progress (a store that keeps failing a block ends it).
    if (seq->kv.block_table.size() > before) RestoreNext(seq, RestoreMode::kBackground);
  }
  SetLengthFromBlocks(seq);
  return seq->kv.length;
}

void PrefixCache::ReapRestores() {
  for (const std::shared_ptr<PrefixRestore>& r : restores_) {
    if (r->done.load(std::memory_order_acquire)) MergeRestore(r.get());
  }
  restores_.erase(std::remove_if(restores_.begin(), restores_.end(),
                                 [](const std::shared_ptr<PrefixRestore>& r) { return r->merged; }),
                  restores_.end());
}

void PrefixCache::WaitForRestores() {
  for (const std::shared_ptr<PrefixRestore>& r : restores_) {
    if (r->thread.joinable()) r->thread.join();
  }
  restores_.clear();
}

}  // namespace llmhost
