// TextCover: whether every text (grammar/text_tokens.h) of up to some
// length, made of some kinds of byte and read from a position inside a
// character, keeps the rows of a PlainRows alive from a row: then a trie
// subtree of such tokens no deeper than that is allowed whole. A loop over
// text ([^"]*, a JSON string's content) covers any depth; a bounded string
// what is left of it; [a-z]+ only subtrees of lower-case letters.
//
// Each answer is a breadth-first search of the (position, row) pairs the
// text reaches, as deep as any token goes; what it proves or refutes is
// kept for every pair it reached. The searches of one walk are bounded in
// all by kTextCoverBudget byte checks (past it the answer is "no": the walk
// steps the nodes instead).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/plain_rows.h"
#include "grammar/text_tokens.h"

namespace llmhost::grammar {

class TextCover {
 public:
  static constexpr size_t kTextCoverBudget = size_t{1} << 15;
  static constexpr uint8_t kUnbounded = 255;

  // `max_depth`: the most bytes any question asks about (the trie's height).
  TextCover(PlainRows* rows, uint8_t max_depth) : rows_(*rows), max_depth_(max_depth) {}

  // Every text of at most `depth` bytes (kUnbounded: any) of the kinds in
  // `kinds`, read from `position`, keeps the rows alive from `row`. Asks
  // about all text first (one answer for most nodes of a string); about
  // just `kinds` only when all text died on a byte of another kind.
  bool Covers(uint8_t position, int32_t row, uint8_t depth, TextTokens::KindSet kinds);

 private:
  struct Known {
    uint8_t safe = 0;                     // texts this long are known safe
    uint8_t unsafe = kUnbounded;          // one this long is known to die (kUnbounded: none known)
    bool unbounded = false;               // every text is safe
    uint8_t killer = TextTokens::kKinds;  // the kind of the byte it died on
  };
  // A row built costs this many byte checks of the budget.
  static constexpr size_t kRowCost = 64;
  // A (position, row) pair: row * kPositions + position.
  using Pair = size_t;
  static uint64_t Key(Pair pair, TextTokens::KindSet kinds) { return (static_cast<uint64_t>(pair) << 16) | kinds; }
  Known& At(Pair pair, TextTokens::KindSet kinds);
  bool CoversOnly(Pair pair, uint8_t depth, TextTokens::KindSet kinds);
  void Search(Pair start, TextTokens::KindSet kinds, uint8_t depth);

  PlainRows& rows_;
  uint8_t max_depth_;
  size_t budget_ = kTextCoverBudget;
  std::vector<Known> all_kinds_;                 // [pair]: answers for kAllKinds (most questions)
  std::unordered_map<uint64_t, Known> partial_;  // by Key: answers for fewer kinds
  // Scratch of a search.
  std::vector<uint32_t> seen_;  // [pair] == stamp_: reached
  uint32_t stamp_ = 0;
  std::vector<std::pair<Pair, uint8_t>> reached_;  // pairs reached, at their first layer
  std::vector<Pair> layer_, next_layer_;
};

}  // namespace llmhost::grammar
