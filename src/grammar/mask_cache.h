// MaskCache: per DFA state, the tokens accepted or rejected whatever the
// stack below holds (the idea of XGrammar's adaptive token mask cache), so a
// step combines a few stored sets and walks with its real stacks only the
// tokens that leave the top rule with bytes to spare (after a JSON string's
// closing quote, say), and of those only the ones whose next byte the frames
// below can take. Filled lazily by the first Matcher that needs a state,
// from the vocabulary's shared entries (grammar/shared_mask_cache.h) where
// another grammar, or an equivalent state of this one, has walked the same
// automaton already.
//
// Thread-safe: reads are lock-free (entries are published once through
// atomics); a miss computes outside the lock and publishes under it (two
// threads that miss together both compute, one result is kept).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "grammar/mask_entry.h"
#include "util/status.h"

namespace llmhost::grammar {

class CompiledGrammar;
class TokenVocab;

class MaskCache {
 public:
  MaskCache(size_t states, const TokenVocab& vocab);
  ~MaskCache();
  MaskCache(const MaskCache&) = delete;
  MaskCache& operator=(const MaskCache&) = delete;

  Result<const MaskEntry*> Get(const CompiledGrammar& g, int32_t state);
  // Bits of every token in the vocabulary's trie.
  std::span<const uint32_t> trie_tokens() const { return trie_tokens_; }
  // Entries filled so far (walked, or taken from the shared cache): a step
  // that raises it met a state first (`llmhost grammar-check` reports
  // those masks as cold).
  size_t filled() const { return filled_.load(std::memory_order_relaxed); }

 private:
  const MaskEntry* Publish(int32_t state, std::shared_ptr<const MaskEntry> entry);

  std::unique_ptr<std::atomic<const MaskEntry*>[]> entries_;
  std::span<const uint32_t> trie_tokens_;
  std::atomic<size_t> filled_{0};
  std::mutex mu_;
  std::vector<std::shared_ptr<const MaskEntry>> owned_;  // guarded by mu_; keeps entries_ alive
};

}  // namespace llmhost::grammar
