// An open-addressing hash map from a token-id pair to its merge (rank and
// merged id): BPE's hot lookup, flat so that lookups touch one cache line.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace llmhost::tok {

struct MergeInfo {
  uint32_t rank;
  TokenId new_id;
};

class PairMap {
 public:
  static uint64_t Key(TokenId a, TokenId b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  void Reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    Rehash(cap);
  }

  // Inserts or overwrites (a later merge of the same pair wins, as in HF).
  void Put(uint64_t key, MergeInfo info) {
    if (2 * (size_ + 1) > slots_.size()) Rehash(slots_.empty() ? 16 : slots_.size() * 2);
    size_t i = Find(key);
    if (slots_[i].key == kEmpty) ++size_;
    slots_[i] = Slot{key, info};
  }

  const MergeInfo* Get(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    const Slot& s = slots_[Find(key)];
    return s.key == kEmpty ? nullptr : &s.info;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // ids are < 2^24: never a key
  struct Slot {
    uint64_t key = kEmpty;
    MergeInfo info{};
  };
  size_t Find(uint64_t key) const {
    size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask;
    return i;
  }
  void Rehash(size_t cap) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    size_ = 0;
    for (const Slot& s : old)
      if (s.key != kEmpty) Put(s.key, s.info);
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace llmhost::tok
