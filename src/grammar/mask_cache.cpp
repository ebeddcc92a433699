#include "grammar/mask_cache.h"

#include <algorithm>

#include "grammar/compiled_grammar.h"
#include "grammar/token_trie.h"
#include "grammar/token_walk.h"

namespace llmhost::grammar {
namespace {

void SetBit(std::span<uint32_t> mask, int32_t id) { mask[static_cast<size_t>(id) >> 5] |= 1u << (id & 31); }

std::unique_ptr<MaskEntry> MakeEntry(const TokenTrie& trie, size_t vocab, LocalTokenSets sets) {
  auto entry = std::make_unique<MaskEntry>();
  size_t accepted = sets.accepted.size();
  size_t rejected = trie.token_count() - accepted;
  size_t list_limit = vocab / 32;  // a list of ids beats a bitset below this
  if (accepted <= list_limit) {
    entry->form = MaskEntry::Form::kAcceptedIds;
    for (int32_t r : sets.accepted) entry->ids.push_back(trie.id_of_rank(r));
  } else if (rejected <= list_limit) {
    entry->form = MaskEntry::Form::kRejectedIds;
    std::vector<uint8_t> is_accepted(trie.token_count(), 0);
    for (int32_t r : sets.accepted) is_accepted[r] = 1;
    for (size_t r = 0; r < trie.token_count(); ++r)
      if (!is_accepted[r]) entry->ids.push_back(trie.id_of_rank(static_cast<int32_t>(r)));
  } else {
    entry->form = MaskEntry::Form::kAcceptedBits;
    entry->bits.assign((vocab + 31) / 32, 0);
    for (int32_t r : sets.accepted) SetBit(entry->bits, trie.id_of_rank(r));
  }
  std::sort(entry->ids.begin(), entry->ids.end());
  entry->escapes = std::move(sets.escapes);
  return entry;
}

}  // namespace

void MaskEntry::AddAccepted(std::span<uint32_t> mask, std::span<const uint32_t> trie_tokens) const {
  switch (form) {
    case Form::kAcceptedIds:
      for (int32_t id : ids) SetBit(mask, id);
      break;
    case Form::kAcceptedBits:
      for (size_t w = 0; w < mask.size(); ++w) mask[w] |= bits[w];
      break;
    case Form::kRejectedIds: {
      // mask |= trie_tokens & ~rejected, one word at a time.
      size_t next = 0;
      for (size_t w = 0; w < mask.size(); ++w) {
        uint32_t word = trie_tokens[w];
        for (; next < ids.size() && (static_cast<size_t>(ids[next]) >> 5) == w; ++next) word &= ~(1u << (ids[next] & 31));
        mask[w] |= word;
      }
      break;
    }
  }
}

MaskCache::MaskCache(size_t states, const TokenVocab& vocab)
    : entries_(new std::atomic<const MaskEntry*>[states]), size_(states) {
  for (size_t i = 0; i < states; ++i) entries_[i].store(nullptr, std::memory_order_relaxed);
  const TokenTrie& trie = vocab.trie();
  trie_tokens_.assign((vocab.size() + 31) / 32, 0);
  for (size_t r = 0; r < trie.token_count(); ++r) SetBit(trie_tokens_, trie.id_of_rank(static_cast<int32_t>(r)));
}

MaskCache::~MaskCache() {
  for (size_t i = 0; i < size_; ++i) delete entries_[i].load(std::memory_order_relaxed);
}

Result<const MaskEntry*> MaskCache::Get(const CompiledGrammar& g, int32_t state) {
  const MaskEntry* entry = entries_[state].load(std::memory_order_acquire);
  if (entry != nullptr) return entry;
  ASSIGN_OR_RETURN(LocalTokenSets sets, WalkFromState(g, state));
  std::unique_ptr<MaskEntry> fresh = MakeEntry(g.vocab().trie(), g.vocab().size(), std::move(sets));
  const MaskEntry* expected = nullptr;
  if (entries_[state].compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) {
    filled_.fetch_add(1, std::memory_order_relaxed);
    return fresh.release();
  }
  return expected;  // another thread published first
}

}  // namespace llmhost::grammar
