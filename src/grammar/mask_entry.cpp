#include "grammar/mask_entry.h"

#include <algorithm>
#include <bit>

#include "grammar/token_trie.h"
#include "grammar/token_walk.h"

namespace llmhost::grammar {
namespace {

void SetBit(std::span<uint32_t> mask, int32_t id) { mask[static_cast<size_t>(id) >> 5] |= 1u << (id & 31); }

// Appends the ids of the bits set in `words[w] & keep(w)`.
template <typename Keep>
void AppendIds(std::span<const uint32_t> words, Keep keep, std::vector<int32_t>* out) {
  for (size_t w = 0; w < words.size(); ++w)
    for (uint32_t bits = words[w] & keep(w); bits != 0; bits &= bits - 1)
      out->push_back(static_cast<int32_t>(w * 32 + std::countr_zero(bits)));
}

}  // namespace

std::unique_ptr<MaskEntry> MaskEntry::From(const TokenTrie& trie, LocalTokenSets sets) {
  auto entry = std::make_unique<MaskEntry>();
  std::span<const uint32_t> all = trie.token_bits();
  size_t accepted = 0;
  for (uint32_t w : sets.accepted) accepted += static_cast<size_t>(std::popcount(w));
  size_t rejected = trie.token_count() - accepted;
  size_t list_limit = all.size();  // a list of ids beats a bitset below a 32nd of the vocabulary
  if (accepted <= list_limit) {
    entry->form = Form::kAcceptedIds;
    AppendIds(
        sets.accepted, [](size_t) { return ~0u; }, &entry->ids);
  } else if (rejected <= list_limit) {
    entry->form = Form::kRejectedIds;
    AppendIds(
        all, [&](size_t w) { return ~sets.accepted[w]; }, &entry->ids);
  } else {
    entry->form = Form::kAcceptedBits;
    entry->bits = std::move(sets.accepted);
  }
  entry->escapes = std::move(sets.escapes);
  return entry;
}

void MaskEntry::AddAccepted(std::span<uint32_t> mask, std::span<const uint32_t> trie_tokens) const {
  switch (form) {
    case Form::kAcceptedIds:
      for (int32_t id : ids) SetBit(mask, id);
      break;
    case Form::kAcceptedBits:
      for (size_t w = 0; w < std::min(mask.size(), bits.size()); ++w) mask[w] |= bits[w];
      break;
    case Form::kRejectedIds: {
      // mask |= trie_tokens & ~rejected, one word at a time.
      size_t next = 0;
      for (size_t w = 0; w < std::min(mask.size(), trie_tokens.size()); ++w) {
        uint32_t word = trie_tokens[w];
        for (; next < ids.size() && (static_cast<size_t>(ids[next]) >> 5) == w; ++next)
          word &= ~(1u << (ids[next] & 31));
        mask[w] |= word;
      }
      break;
    }
  }
}

size_t MaskEntry::bytes() const {
  return sizeof(MaskEntry) + ids.capacity() * sizeof(int32_t) + bits.capacity() * sizeof(uint32_t) +
         escapes.capacity() * sizeof(escapes[0]);
}

}  // namespace llmhost::grammar
