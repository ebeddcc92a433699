// MaskEntry: what the tokens do from one DFA state whatever the stack below
// it holds (grammar/token_walk.h: LocalTokenSets), stored compactly for the
// mask cache (grammar/mask_cache.h) and shared between grammars
// (grammar/shared_mask_cache.h). Immutable once built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace llmhost::grammar {

class TokenTrie;
struct LocalTokenSets;

struct MaskEntry {
  // Stored as whichever of the three is smallest.
  enum class Form : uint8_t { kAcceptedIds, kRejectedIds, kAcceptedBits };
  Form form = Form::kAcceptedIds;
  std::vector<int32_t> ids;    // sorted token ids (kAcceptedIds / kRejectedIds)
  std::vector<uint32_t> bits;  // kAcceptedBits: a mask of the vocabulary
  // Trie nodes under which tokens leave the state's rule (LocalTokenSets::
  // escapes), sorted by their byte; their tokens count as rejected above.
  std::vector<std::pair<uint8_t, int32_t>> escapes;

  static std::unique_ptr<MaskEntry> From(const TokenTrie& trie, LocalTokenSets sets);

  // ORs the accepted tokens into `mask`; `trie_tokens` has the bits of all
  // tokens in the trie (the universe of kRejectedIds).
  void AddAccepted(std::span<uint32_t> mask, std::span<const uint32_t> trie_tokens) const;
  // Heap bytes held, for the shared cache's bound.
  size_t bytes() const;
};

}  // namespace llmhost::grammar
