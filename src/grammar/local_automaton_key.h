// LocalAutomatonKey: what a mask-cache walk from one DFA state depends on
// (grammar/token_walk.h: WalkFromState), as a canonical sequence of
// integers, so that equal keys mean equal mask entries in any grammar
// compiled against the same vocabulary (grammar/shared_mask_cache.h).
//
// The walk sees the states reachable from the state through bytes and
// calls, and of each only whether it accepts (the rule may finish there),
// whether it has token edges (a special token may follow), where its bytes
// lead and which rules it calls. The key is that automaton with the states
// that behave alike merged (partition refinement to the coarsest
// bisimulation), numbered in breadth-first order from the state, each
// written as: flags; byte transitions as runs (first byte, target + 1,
// 0 for none); calls as (callee start, return state) pairs. Merging makes the
// copies of one loop that subset construction leaves (a JSON string's
// content after each kind of character) share one key.
//
// Calls are numbered in the grammar's order of its rules, so a state whose
// walk reaches several calls may get different keys in grammars that
// number them differently (a missed share, never a wrong one).
//
// Bounded: no key (nullopt) past kMaxKeyStates reachable states or
// kMaxKeyRounds rounds of refinement; such states keep entries of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace llmhost::grammar {

inline constexpr size_t kMaxKeyStates = 64;
inline constexpr int kMaxKeyRounds = 32;

std::optional<std::vector<uint32_t>> LocalAutomatonKey(const CompiledGrammar& g, int32_t state);

}  // namespace llmhost::grammar
