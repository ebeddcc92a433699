// Constrained decoding: a grammar compiled against a vocabulary
// (CompiledGrammar, immutable, cached and shared by every request that uses
// it) and the per-request state that walks it (Matcher).
//
// For each step the Matcher gives the set of tokens whose bytes keep the text
// a prefix of some string of the grammar, as a bitmask over the vocabulary;
// EOS ids are in it where the text so far is a complete match. The sampler
// masks the logits with it before temperature and top-k/p, and the chosen
// token advances the Matcher.
//
// Thread safety: a CompiledGrammar may be used by many Matchers on many
// threads at once (its lazily filled caches lock internally). A Matcher is
// used by one thread at a time; it is copyable (each of `n` choices takes
// a copy) and cheap to copy.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/token_vocab.h"
#include "util/status.h"

namespace llmhost::grammar {

struct CompileOptions {
  // Matchers fail a step (Status) rather than track more parse stacks than
  // this (an ambiguous grammar can multiply them).
  int max_stacks = 4096;
};

class CompiledGrammar;

// InvalidArgument (naming the rule) for left recursion, a rule that can
// never match, or a grammar over the size limits.
Result<std::shared_ptr<const CompiledGrammar>> Compile(const Grammar& grammar,
                                                       std::shared_ptr<const TokenVocab> vocab,
                                                       const CompileOptions& options = {});

inline size_t MaskWords(size_t vocab) { return (vocab + 31) / 32; }
inline bool MaskAllows(std::span<const uint32_t> mask, TokenId id) {
  return (mask[static_cast<size_t>(id) >> 5] >> (id & 31)) & 1u;
}

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const CompiledGrammar> grammar);
  Matcher(const Matcher&);
  Matcher& operator=(const Matcher&);
  Matcher(Matcher&&) noexcept;
  Matcher& operator=(Matcher&&) noexcept;
  ~Matcher();

  // Fills `mask` (MaskWords(vocab) words; bit id set = allowed) with the
  // tokens allowed next. Never empty while !IsTerminated(): where no token
  // can continue, the match can end and EOS is allowed.
  Status FillNextTokenMask(std::span<uint32_t> mask);
  // Advances on one token: InvalidArgument (state unchanged) when the token
  // is not allowed. Accepting an EOS id terminates the matcher.
  Status AcceptToken(TokenId id);
  // Advances on raw bytes (tests, grammar-check); false (state unchanged)
  // when they leave the grammar.
  bool AcceptBytes(std::string_view bytes);

  // The text so far is a complete match.
  bool CanEnd() const;
  // Nothing may follow: an EOS was accepted, or the match is complete and no
  // byte or token can extend it.
  bool IsTerminated() const;
  // Bytes every continuation starts with ("" where there is a choice or the
  // match may end): the engine may append their tokens without sampling.
  std::string ForcedBytes() const;

  const CompiledGrammar& grammar() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace llmhost::grammar
