// SharedMaskCache: mask-cache entries (grammar/mask_entry.h) shared by every
// grammar compiled against one vocabulary, keyed by the canonical form of
// what a state's walk depends on (grammar/local_automaton_key.h). A JSON
// string's content, the same in every schema, is walked once per vocabulary
// instead of once per compiled grammar, and so is each loop that subset
// construction copied into several DFA states.
//
// Owned by the TokenVocab (its entries name the vocabulary's trie nodes).
// Bounded: past `capacity_bytes` (keys and entries) the least recently used
// entries go; a grammar that holds one keeps it alive.
//
// Thread-safe: one mutex, taken once per state per compiled grammar (the
// grammar's own cache answers after that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/mask_entry.h"

namespace llmhost::grammar {

struct SharedMaskCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  size_t entries = 0;
  size_t bytes = 0;
};

class SharedMaskCache {
 public:
  static constexpr size_t kDefaultCapacityBytes = size_t{32} << 20;

  explicit SharedMaskCache(size_t capacity_bytes = kDefaultCapacityBytes) : capacity_(capacity_bytes) {}
  SharedMaskCache(const SharedMaskCache&) = delete;
  SharedMaskCache& operator=(const SharedMaskCache&) = delete;

  // The entry stored under `key`, or null (a miss).
  std::shared_ptr<const MaskEntry> Find(const std::vector<uint32_t>& key);
  // Stores `entry` under `key` unless one is there already (a concurrent
  // miss); returns the one stored.
  std::shared_ptr<const MaskEntry> Insert(std::vector<uint32_t> key, std::shared_ptr<const MaskEntry> entry);

  SharedMaskCacheStats stats() const;
  // Evicts down to the new bound at once.
  void set_capacity(size_t bytes);
  void Clear();

 private:
  struct KeyHash {
    size_t operator()(const std::vector<uint32_t>& key) const;
  };
  struct Item {
    const std::vector<uint32_t>* key;  // the index's own copy
    std::shared_ptr<const MaskEntry> entry;
    size_t bytes;
  };
  using Lru = std::list<Item>;  // most recently used first

  void EvictLocked();

  mutable std::mutex mu_;
  size_t capacity_;
  Lru lru_;
  std::unordered_map<std::vector<uint32_t>, Lru::iterator, KeyHash> index_;
  SharedMaskCacheStats stats_;
};

}  // namespace llmhost::grammar
