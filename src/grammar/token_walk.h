// Walks of the token trie (grammar/token_trie.h) with sets of parse stacks
// (grammar/parse_stacks.h): a token is allowed when some stack survives all
// of its bytes. Dead subtrees are skipped whole.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/parse_stacks.h"

namespace llmhost::grammar {

// What the tokens do from one DFA state whatever lies below it (the stack
// starts at the state over kOutside). Ranks are trie ranks, sorted.
struct LocalTokenSets {
  // Every byte consumed without leaving the state's rule (or leaving it
  // exactly at the token's end): allowed under any caller.
  std::vector<int32_t> accepted;
  // Not accepted, but the rule can finish inside the token with bytes
  // left over for the caller: decided by the full stack.
  std::vector<int32_t> uncertain;
  // The rest are rejected under any caller.
};

Result<LocalTokenSets> WalkFromState(const CompiledGrammar& g, int32_t state);

// Sets in `mask` the bits of the tokens among `ranks` (sorted) whose bytes
// some stack of `tops` (closed, in `arena`) survives. The arena is left as
// it was.
Status WalkRanks(const CompiledGrammar& g, StackArena* arena, std::span<const int32_t> tops,
                 std::span<const int32_t> ranks, std::span<uint32_t> mask);

}  // namespace llmhost::grammar
