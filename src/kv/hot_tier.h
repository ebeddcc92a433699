// The hot tier: an LRU of whole blocks in RAM under a byte budget, each with
// a dirty flag (write-back: not on disk yet). Not thread-safe: the store's
// mutex guards it. Keeps the hot_* gauges and evictions of the stats book.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "kv/block_file.h"
#include "kv/block_store.h"
#include "kv/tier_stats_book.h"

namespace llmhost {

class HotTier {
 public:
  struct Entry {
    BlockMeta meta;
    BlockBytes data;
    bool dirty = false;
  };
  enum class Insert { kInserted, kDuplicate, kTooBig };

  HotTier(uint64_t max_bytes, TierStatsBook* stats) : max_bytes_(max_bytes), stats_(stats) {}

  // The entry, marked most recently used; null when absent.
  const Entry* Find(const BlockKey& key);
  bool Contains(const BlockKey& key) const { return map_.count(key) != 0; }
  // Adds a block as most recently used, evicting least recently used ones
  // into *evicted until it fits. kDuplicate (only touched) when the key is
  // held, kTooBig when the block alone exceeds the budget.
  Insert Add(const BlockMeta& meta, BlockBytes data, bool dirty, std::vector<Entry>* evicted);
  // Evicts LRU entries into *evicted until at most target bytes are held.
  void EvictTo(uint64_t target, std::vector<Entry>* evicted);
  // Copies (shared bytes) of the dirty entries, least recently used first.
  std::vector<Entry> Dirty() const;
  // Clears the dirty flag if the entry still holds `data`.
  void MarkClean(const BlockKey& key, const BlockBytes& data);

  uint64_t bytes() const { return bytes_; }
  size_t blocks() const { return map_.size(); }
  uint64_t max_bytes() const { return max_bytes_; }

 private:
  using List = std::list<Entry>;  // front: most recently used
  void PopLru(std::vector<Entry>* evicted);

  uint64_t max_bytes_;
  TierStatsBook* stats_;
  uint64_t bytes_ = 0;
  List lru_;
  std::unordered_map<BlockKey, List::iterator, BlockKeyHash> map_;
};

}  // namespace llmhost
