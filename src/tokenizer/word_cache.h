// A bounded, thread-safe cache piece -> ids for the models. Sharded by hash so
// that concurrent encoders rarely contend; a full shard is simply cleared
// (cheap, and hot words come back at once).
#pragma once

#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/model.h"

namespace llmhost::tok {

class WordCache {
 public:
  // About 10k entries in all (HF caches 10k words): a few MB for real text,
  // ~15 MB at worst (every key 256 bytes).
  static constexpr size_t kMaxKeyBytes = 256;  // longer pieces are not cached
  static constexpr size_t kShards = 16;
  static constexpr size_t kPerShard = 640;

  // Appends the cached ids of `key` to *out; false on a miss.
  bool Get(std::string_view key, std::vector<TokenId>* out) const {
    if (key.size() > kMaxKeyBytes) return false;
    size_t h = StringHash()(key);
    Shard& s = shards_[h % kShards];
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end()) return false;
    out->insert(out->end(), it->second.begin(), it->second.end());
    return true;
  }

  void Put(std::string_view key, const TokenId* ids, size_t n) const {
    if (key.size() > kMaxKeyBytes) return;
    size_t h = StringHash()(key);
    Shard& s = shards_[h % kShards];
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.map.size() >= kPerShard) s.map.clear();
    s.map.emplace(std::string(key), std::vector<TokenId>(ids, ids + n));
  }

 private:
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> map;
  };
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace llmhost::tok
