// TokenVocab: what each token of a model's vocabulary adds to the text, as
// bytes, for matching tokens against a grammar.
//
// Byte-level BPE tokens map back through GPT-2's alphabet; SentencePiece
// pieces turn U+2581 into a space and <0xNN> byte-fallback pieces into their
// byte; WordPiece continuations lose their "##". A token that stands for part
// of a UTF-8 character is those bytes alone. Special (control) tokens have no
// bytes here: a grammar reaches them only through Node::kToken.
//
// Built once per tokenizer and shared: immutable but for the mask-cache
// entries its grammars share (grammar/shared_mask_cache.h), which lock;
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace llmhost::grammar {

class SharedMaskCache;
class TextTokens;
class TokenTrie;

class TokenVocab {
 public:
  // `eos_ids`: the ids that end a generation (the model's EOS / end of turn);
  // a grammar allows them where its match can end.
  static std::shared_ptr<const TokenVocab> FromTokenizer(const Tokenizer& tokenizer,
                                                         std::vector<TokenId> eos_ids);
  // For tests: token i has bytes tokens[i]; ids in `special` are control tokens.
  static std::shared_ptr<const TokenVocab> FromBytes(std::vector<std::string> tokens,
                                                     std::vector<TokenId> special,
                                                     std::vector<TokenId> eos_ids);

  size_t size() const { return bytes_.size(); }
  std::string_view bytes(TokenId id) const { return bytes_[id]; }
  bool is_special(TokenId id) const { return special_[id] != 0; }
  std::span<const TokenId> eos_ids() const { return eos_; }
  bool is_eos(TokenId id) const;
  // The id of a special token by its text ("<tool_call>"), or -1.
  TokenId SpecialId(std::string_view text) const;
  // The token bytes as a trie (grammar/token_trie.h), for mask walks.
  const TokenTrie& trie() const { return *trie_; }
  // Which tokens are plain text (grammar/text_tokens.h), for mask walks.
  const TextTokens& text_tokens() const { return *text_; }
  // The mask-cache entries of every grammar compiled against this
  // vocabulary (bounded; see grammar/shared_mask_cache.h).
  SharedMaskCache& shared_masks() const { return *shared_masks_; }

 private:
  void BuildTrie();

  std::vector<std::string> bytes_;
  std::vector<uint8_t> special_;
  std::vector<std::string> special_text_;  // [id] the text of special tokens, else ""
  std::vector<TokenId> eos_;
  std::shared_ptr<const TokenTrie> trie_;
  std::shared_ptr<const TextTokens> text_;
  std::shared_ptr<SharedMaskCache> shared_masks_;
};

}  // namespace llmhost::grammar
