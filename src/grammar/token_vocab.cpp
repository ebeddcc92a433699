#include "grammar/token_vocab.h"

#include <algorithm>

#include "grammar/shared_mask_cache.h"
#include "grammar/text_tokens.h"
#include "grammar/token_trie.h"

namespace llmhost::grammar {

std::shared_ptr<const TokenVocab> TokenVocab::FromTokenizer(const Tokenizer& tokenizer,
                                                            std::vector<TokenId> eos_ids) {
  auto vocab = std::make_shared<TokenVocab>();
  size_t n = tokenizer.VocabSize();
  vocab->bytes_.resize(n);
  vocab->special_.assign(n, 0);
  vocab->special_text_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TokenId id = static_cast<TokenId>(i);
    if (tokenizer.IsSpecial(id)) {
      vocab->special_[i] = 1;
      vocab->special_text_[i] = tokenizer.IdToToken(id).value_or("");
      continue;
    }
    // Unknown ids (holes in the vocabulary) keep no bytes and are never allowed.
    vocab->bytes_[i] = tokenizer.TokenBytes(id).value_or("");
  }
  for (TokenId id : eos_ids)
    if (id >= 0 && static_cast<size_t>(id) < n) vocab->eos_.push_back(id);
  vocab->BuildTrie();
  return vocab;
}

std::shared_ptr<const TokenVocab> TokenVocab::FromBytes(std::vector<std::string> tokens,
                                                        std::vector<TokenId> special,
                                                        std::vector<TokenId> eos_ids) {
  auto vocab = std::make_shared<TokenVocab>();
  size_t n = tokens.size();
  vocab->special_.assign(n, 0);
  vocab->special_text_.resize(n);
  for (TokenId id : special) {
    if (id < 0 || static_cast<size_t>(id) >= n) continue;
    vocab->special_[id] = 1;
    vocab->special_text_[id] = std::move(tokens[id]);
    tokens[id].clear();
  }
  vocab->bytes_ = std::move(tokens);
  for (TokenId id : eos_ids)
    if (id >= 0 && static_cast<size_t>(id) < n) vocab->eos_.push_back(id);
  vocab->BuildTrie();
  return vocab;
}

void TokenVocab::BuildTrie() {
  std::sort(eos_.begin(), eos_.end());
  eos_.erase(std::unique(eos_.begin(), eos_.end()), eos_.end());
  // EOS ids are allowed only where the match can end, never for their bytes.
  std::vector<uint8_t> skip = special_;
  for (TokenId id : eos_) skip[id] = 1;
  trie_ = std::make_shared<TokenTrie>(bytes_, skip);
  text_ = std::make_shared<TextTokens>(*trie_);
  shared_masks_ = std::make_shared<SharedMaskCache>();
}

bool TokenVocab::is_eos(TokenId id) const { return std::binary_search(eos_.begin(), eos_.end(), id); }

TokenId TokenVocab::SpecialId(std::string_view text) const {
  if (text.empty()) return -1;
  for (size_t i = 0; i < special_text_.size(); ++i)
    if (special_[i] && special_text_[i] == text) return static_cast<TokenId>(i);
  return -1;
}

}  // namespace llmhost::grammar
