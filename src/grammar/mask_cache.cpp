#include "grammar/mask_cache.h"

#include "grammar/compiled_grammar.h"
#include "grammar/local_automaton_key.h"
#include "grammar/shared_mask_cache.h"
#include "grammar/token_trie.h"
#include "grammar/token_walk.h"

namespace llmhost::grammar {

MaskCache::MaskCache(size_t states, const TokenVocab& vocab)
    : entries_(new std::atomic<const MaskEntry*>[states]), trie_tokens_(vocab.trie().token_bits()) {
  for (size_t i = 0; i < states; ++i) entries_[i].store(nullptr, std::memory_order_relaxed);
}

MaskCache::~MaskCache() = default;

const MaskEntry* MaskCache::Publish(int32_t state, std::shared_ptr<const MaskEntry> entry) {
  std::lock_guard<std::mutex> lk(mu_);
  if (const MaskEntry* there = entries_[state].load(std::memory_order_relaxed)) return there;  // another thread won
  owned_.push_back(std::move(entry));
  filled_.fetch_add(1, std::memory_order_relaxed);
  entries_[state].store(owned_.back().get(), std::memory_order_release);
  return owned_.back().get();
}

Result<const MaskEntry*> MaskCache::Get(const CompiledGrammar& g, int32_t state) {
  const MaskEntry* entry = entries_[state].load(std::memory_order_acquire);
  if (entry != nullptr) return entry;
  SharedMaskCache& shared = g.vocab().shared_masks();
  std::optional<std::vector<uint32_t>> key = LocalAutomatonKey(g, state);
  if (key) {
    if (std::shared_ptr<const MaskEntry> found = shared.Find(*key)) return Publish(state, std::move(found));
  }
  ASSIGN_OR_RETURN(LocalTokenSets sets, WalkFromState(g, state));
  std::shared_ptr<const MaskEntry> fresh = MaskEntry::From(g.vocab().trie(), std::move(sets));
  if (key) fresh = shared.Insert(std::move(*key), std::move(fresh));
  return Publish(state, std::move(fresh));
}

}  // namespace llmhost::grammar
