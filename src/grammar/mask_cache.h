// MaskCache: per DFA state, the tokens accepted or rejected whatever the
// stack below holds (the idea of XGrammar's adaptive token mask cache), so a
// step combines a few stored sets and walks with its real stacks only the
// tokens that leave the top rule with bytes to spare (after a JSON string's
// closing quote, say), and of those only the ones whose next byte the frames
// below can take. Filled lazily by the first Matcher that needs a state.
//
// Thread-safe: entries are published once through atomics; two threads that
// miss together both compute, one result is kept.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "util/status.h"

namespace llmhost::grammar {

class CompiledGrammar;
class TokenVocab;

struct MaskEntry {
  // Stored as whichever of the three is smallest.
  enum class Form : uint8_t { kAcceptedIds, kRejectedIds, kAcceptedBits };
  Form form = Form::kAcceptedIds;
  std::vector<int32_t> ids;        // sorted token ids (kAcceptedIds / kRejectedIds)
  std::vector<uint32_t> bits;      // kAcceptedBits: a mask of the vocabulary
  // Trie nodes under which tokens leave the state's rule (LocalTokenSets::
  // escapes), sorted by their byte; their tokens count as rejected above.
  std::vector<std::pair<uint8_t, int32_t>> escapes;

  // ORs the accepted tokens into `mask`; `trie_tokens` has the bits of all
  // tokens in the trie (the universe of kRejectedIds).
  void AddAccepted(std::span<uint32_t> mask, std::span<const uint32_t> trie_tokens) const;
};

class MaskCache {
 public:
  MaskCache(size_t states, const TokenVocab& vocab);
  ~MaskCache();
  MaskCache(const MaskCache&) = delete;
  MaskCache& operator=(const MaskCache&) = delete;

  Result<const MaskEntry*> Get(const CompiledGrammar& g, int32_t state);
  // Bits of every token in the vocabulary's trie.
  std::span<const uint32_t> trie_tokens() const { return trie_tokens_; }
  // Entries computed so far: a step that raises it filled the cache for a
  // state it met first (`llmhost grammar-check` reports those masks as cold).
  size_t filled() const { return filled_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<std::atomic<const MaskEntry*>[]> entries_;
  size_t size_;
  std::atomic<size_t> filled_{0};
  std::vector<uint32_t> trie_tokens_;
};

}  // namespace llmhost::grammar
