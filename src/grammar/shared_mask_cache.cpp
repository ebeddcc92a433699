#include "grammar/shared_mask_cache.h"

namespace llmhost::grammar {

size_t SharedMaskCache::KeyHash::operator()(const std::vector<uint32_t>& key) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ key.size();
  for (uint32_t x : key) {
    h ^= x;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return static_cast<size_t>(h);
}

std::shared_ptr<const MaskEntry> SharedMaskCache::Find(const std::vector<uint32_t>& key) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->entry;
}

std::shared_ptr<const MaskEntry> SharedMaskCache::Insert(std::vector<uint32_t> key,
                                                         std::shared_ptr<const MaskEntry> entry) {
  std::lock_guard<std::mutex> lk(mu_);
  if (auto it = index_.find(key); it != index_.end()) return it->second->entry;
  size_t bytes = entry->bytes() + key.capacity() * sizeof(uint32_t) + sizeof(Item) + 64;  // + list and map nodes
  auto [it, inserted] = index_.emplace(std::move(key), lru_.end());
  lru_.push_front({&it->first, entry, bytes});
  it->second = lru_.begin();
  stats_.bytes += bytes;
  EvictLocked();
  stats_.entries = lru_.size();
  return entry;
}

void SharedMaskCache::EvictLocked() {
  while (stats_.bytes > capacity_ && !lru_.empty()) {
    stats_.bytes -= lru_.back().bytes;
    index_.erase(index_.find(*lru_.back().key));
    lru_.pop_back();
  }
  stats_.entries = lru_.size();
}

SharedMaskCacheStats SharedMaskCache::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

void SharedMaskCache::set_capacity(size_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  capacity_ = bytes;
  EvictLocked();
}

void SharedMaskCache::Clear() {
  std::lock_guard<std::mutex> lk(mu_);
  index_.clear();
  lru_.clear();
  stats_ = {};
}

}  // namespace llmhost::grammar
