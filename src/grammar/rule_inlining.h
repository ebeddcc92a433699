// Which rule references the compiler expands in place rather than calling.
//
// Expanding a reference puts the callee's bytes in the caller's automaton,
// so a token crossing from one into the other is decided by one DFA state's
// cached mask instead of a walk of the parse stacks. Only rules that are not
// recursive, whose own body has no unbounded repetition and which stay small
// are expanded: a rule with a loop (a JSON string, a number, free text) stays
// a call, so all of its uses share one set of DFA states and so one mask
// cache, which is where the work of a mask is.
#pragma once

#include <vector>

#include "grammar/grammar.h"

namespace llmhost::grammar {

// Largest expansion (in automaton states, estimated) of an inlined rule.
inline constexpr int kInlineLimit = 128;

// [rule] != 0: references to it are expanded. The root never is.
std::vector<uint8_t> ChooseInlinedRules(const Grammar& grammar);

}  // namespace llmhost::grammar
