// The hot tier's LRU (kv/hot_tier.h).
#include "kv/hot_tier.h"

namespace llmhost {

const HotTier::Entry* HotTier::Find(const BlockKey& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &*it->second;
}

HotTier::Insert HotTier::Add(const BlockMeta& meta, BlockBytes data, bool dirty,
                             std::vector<Entry>* evicted) {
  if (auto it = map_.find(meta.key); it != map_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return Insert::kDuplicate;
  }
  uint64_t size = data->size();
  if (size > max_bytes_) return Insert::kTooBig;
  while (bytes_ + size > max_bytes_ && !lru_.empty()) PopLru(evicted);
  lru_.push_front(Entry{meta, std::move(data), dirty});
  map_.emplace(meta.key, lru_.begin());
  bytes_ += size;
  stats_->Add(meta.model, &TierStats::hot_bytes, static_cast<int64_t>(size));
  stats_->Add(meta.model, &TierStats::hot_blocks, 1);
  return Insert::kInserted;
}

void HotTier::EvictTo(uint64_t target, std::vector<Entry>* evicted) {
  while (bytes_ > target && !lru_.empty()) PopLru(evicted);
}

void HotTier::PopLru(std::vector<Entry>* evicted) {
  Entry& e = lru_.back();
  uint64_t size = e.data->size();
  bytes_ -= size;
  stats_->Add(e.meta.model, &TierStats::hot_bytes, -static_cast<int64_t>(size));
  stats_->Add(e.meta.model, &TierStats::hot_blocks, -1);
  stats_->Add(e.meta.model, &TierStats::hot_evictions, 1);
  map_.erase(e.meta.key);
  evicted->push_back(std::move(e));
  lru_.pop_back();
}

std::vector<HotTier::Entry> HotTier::Dirty() const {
  std::vector<Entry> out;
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    if (it->dirty) out.push_back(*it);
  }
  return out;
}

void HotTier::MarkClean(const BlockKey& key, const BlockBytes& data) {
  auto it = map_.find(key);
  if (it != map_.end() && it->second->data == data) it->second->dirty = false;
}

}  // namespace llmhost
