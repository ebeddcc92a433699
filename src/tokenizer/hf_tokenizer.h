// HfTokenizer: a Tokenizer built from a Hugging Face tokenizer.json. The
// encode pipeline is HF's: split out added tokens found in the raw text,
// normalize each remaining segment, split out added tokens found in the
// normalized text, pre-tokenize, run the model on each piece, then (with
// add_special) the post-processor.
//
// Invalid UTF-8 input (HF only takes valid strings) is first repaired: each
// invalid byte becomes U+FFFD, then encoded like any other text.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_vocab.h"
#include "tokenizer/decoder.h"
#include "tokenizer/model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace llmhost::tok {

class HfTokenizer : public Tokenizer {
 public:
  static Result<std::unique_ptr<HfTokenizer>> Create(const Json& doc);

  std::vector<TokenId> Encode(std::string_view text, bool add_special) const override;
  std::vector<TokenId> EncodePair(std::string_view a, std::string_view b,
                                  bool add_special) const override;
  std::string Decode(std::span<const TokenId> ids, bool skip_special) const override;
  size_t VocabSize() const override;
  std::optional<std::string> IdToToken(TokenId id) const override;
  std::optional<TokenId> TokenToId(std::string_view token) const override;
  bool IsSpecial(TokenId id) const override;
  std::optional<std::string> TokenBytes(TokenId id) const override;
  std::vector<AddedTokenInfo> AddedTokens() const override;
  std::vector<TokenId> SpecialPrefixIds() const override;
  std::vector<TokenId> SpecialSuffixIds() const override;

 private:
  HfTokenizer() = default;
  // Ids of one sequence, no post-processing.
  std::vector<TokenId> EncodeSequence(std::string_view text) const;
  void EncodeSegment(std::string_view normalized, bool at_start, std::vector<TokenId>* ids) const;
  const AddedToken* FindAdded(TokenId id) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<AddedToken> added_;
  std::unordered_map<TokenId, size_t> added_by_id_;  // id -> index in added_
  VocabMap added_by_content_;
  std::vector<std::string> special_contents_sorted_;  // for skip_special by string
  AddedMatcher raw_matcher_;         // normalized=false tokens, on raw text
  AddedMatcher normalized_matcher_;  // normalized=true tokens, on normalized text
};

}  // namespace llmhost::tok
