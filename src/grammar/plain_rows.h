// PlainRows, for the mask walk (grammar/token_walk.cpp) through the states
// of a rule that call nothing, where most of a walk through a long string
// or free text is: dense transitions among the plain states reachable from one
// plain state by bytes alone, so that a trie node costs a load or two. A
// row is numbered when first seen as a target and built (its 256 entries)
// when a walk first needs it: a long chain (a bounded string) costs only
// the rows the walk reaches. Next(slot, b) is a row (>= 0), -1 (no edge) or
// -2 - s for a state s outside the table (the walk's general form takes
// over); Slot(row) is where a row's entries are.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace llmhost::grammar {

class PlainRows {
 public:
  static constexpr size_t kMaxRows = 4096;

  PlainRows(const CompiledGrammar& g, int32_t start);  // the start is row 0

  int32_t Slot(int32_t row) { return slot_[row] >= 0 ? slot_[row] : Build(row); }
  bool built(int32_t row) const { return slot_[row] >= 0; }
  int32_t Next(int32_t slot, uint8_t b) const { return next_[static_cast<size_t>(slot) * 256 + b]; }
  // The row's state accepts: its rule may finish there.
  bool accepting(int32_t row) const { return accepting_[row] != 0; }
  size_t rows() const { return state_.size(); }

 private:
  int32_t Build(int32_t row);

  const CompiledGrammar& g_;
  std::vector<int32_t> state_;                   // [row]
  std::vector<int32_t> slot_;                    // [row]: -1 until built
  std::vector<uint8_t> accepting_;               // [row]
  std::vector<int32_t> next_;                    // [slot * 256 + byte]
  std::unordered_map<int32_t, int32_t> row_of_;  // state -> row
};

}  // namespace llmhost::grammar
