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
// Beside the entries: where a state's rule can finish inside a token, the
// tokens that then go on in its callers, per (state, the callers' states
// from the nearest, as few as the walk needed: a JSON string closed inside
// a token, `",` and `"}`, is decided by the object around it).
//
// Thread-safe: reads of entries are lock-free (published once through
// atomics); a miss computes outside the lock and publishes under it (two
// threads that miss together both compute, one result is kept). The
// caller-state sets take a mutex per lookup.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
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

  // The tokens allowed through a context (the state, then its callers'
  // states from the nearest; kBottom last where the stack ends there) where
  // the state's rule finishes inside them: sorted ids, `valid` false where
  // they depend on callers further down than the context holds.
  struct CallerTokens {
    bool valid = false;
    std::vector<int32_t> ids;
  };
  // Bounds per grammar: contexts kept, and token ids over all of them.
  static constexpr size_t kMaxCallerEntries = size_t{1} << 12;
  static constexpr size_t kMaxCallerIds = size_t{1} << 20;
  // Null when not known yet.
  std::shared_ptr<const CallerTokens> FindCallerTokens(const std::vector<int32_t>& context);
  // Keeps `tokens` (unless full: then only returns them); returns what is kept.
  std::shared_ptr<const CallerTokens> PutCallerTokens(std::vector<int32_t> context, CallerTokens tokens);

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
  struct ContextHash {
    size_t operator()(const std::vector<int32_t>& v) const;
  };
  std::unordered_map<std::vector<int32_t>, std::shared_ptr<const CallerTokens>, ContextHash>
      caller_tokens_;          // guarded by mu_
  size_t caller_ids_ = 0;  // guarded by mu_: ids held by caller_tokens_
};

}  // namespace llmhost::grammar
