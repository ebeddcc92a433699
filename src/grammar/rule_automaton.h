// One rule's body as a DFA over symbols: bytes (in classes), special tokens
// and calls of other rules. References to inlined rules are expanded in
// place (grammar/rule_inlining.h); the others become call symbols, so the
// automaton recognises the rule's body as a regular language over symbols.
//
// Built as a Thompson NFA from the node tree, then by subset construction.
// Sizes are bounded: an error names the rule whose automaton is too large.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "util/status.h"

namespace llmhost::grammar {

inline constexpr int kMaxNfaStates = 1 << 18;  // per rule
inline constexpr int kMaxDfaStates = 1 << 16;  // per rule
// NFA states in the sets of one rule's DFA states, summed (a repeat of
// something that can be empty makes sets of every state after it).
inline constexpr size_t kMaxSubsetStates = size_t{1} << 22;
inline constexpr int kMaxNodeDepth = 1000;     // nesting of the node tree, inlining included

struct RuleDfa {
  struct State {
    bool accepting = false;
    std::vector<int32_t> byte_next;                // [class] -> state, -1: none; empty: no bytes
    std::vector<std::pair<int32_t, int32_t>> tokens;  // (token id, state), sorted
    std::vector<std::pair<RuleId, int32_t>> calls;    // (callee, return state), sorted
  };
  std::array<uint8_t, 256> byte_class{};  // byte -> class
  int num_classes = 1;
  std::vector<State> states;  // states[0] is the start
};

Result<RuleDfa> BuildRuleDfa(const Grammar& grammar, RuleId rule, const std::vector<uint8_t>& inlined);

}  // namespace llmhost::grammar
