// Fast-forward: the tokens the engine appends without sampling where an
// output constraint forces the bytes that come next
// (grammar::Matcher::ForcedBytes), chosen so that the output keeps the
// tokenizer's canonical tokenization.
//
// The rule: the forced bytes F are appended as the tokenizer's own encoding
// of them, T = Encode(F), and only the tokens of T that cannot change with
// what follows F:
//   1. T must spell F exactly (a tokenizer that rewrites text, such as a
//      SentencePiece prefix space, forces nothing);
//   2. for every continuation probe the grammar allows right after F (each
//      allowed ASCII byte, and a few non-ASCII characters), Encode(F + probe)
//      must begin with the tokens kept;
//   3. the token that reaches the end of F is dropped unless nothing may
//      follow F: a longer continuation could still join it where no single
//      byte does (a pre-tokenizer that joins punctuation with the newlines
//      after it, a BPE merge of more bytes).
// What is kept is the encoding of a prefix of F that ends where every probe
// puts a token boundary, before the last token. The boundary with the text
// before F is the model's own: the sampled token before F stays as it was.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/token_vocab.h"
#include "tokenizer/tokenizer.h"

namespace llmhost {

// At most this many tokens are forced at once (the rest after the next sample).
inline constexpr size_t kMaxForcedTokens = 32;

// The tokens to append for `forced` (non-empty), where `after` is the
// matcher advanced over `forced` and `vocab` the constraint's vocabulary
// (the bytes the matcher checks tokens against).
std::vector<int32_t> StableForcedTokens(const Tokenizer& tokenizer, const grammar::TokenVocab& vocab,
                                        std::string_view forced, const grammar::Matcher& after);

}  // namespace llmhost
