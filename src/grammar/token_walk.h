// Walks of the token trie (grammar/token_trie.h) with sets of parse stacks
// (grammar/parse_stacks.h): a token is allowed when some stack survives all
// of its bytes. Dead subtrees are skipped whole.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/parse_stacks.h"

namespace llmhost::grammar {

// What the tokens do from one DFA state whatever lies below it (the stack
// starts at the state over kOutside).
struct LocalTokenSets {
  // The tokens whose bytes are consumed without leaving the state's rule, or
  // that leave it exactly at their end: allowed under any caller. A mask
  // over the vocabulary (MaskWords words).
  std::vector<uint32_t> accepted;
  // Where the rule can finish after some bytes of a token, with more bytes
  // to come: the trie nodes just below such a point, with their bytes.
  // Whether the tokens under them are allowed depends on the caller (the
  // frames below the top), so the matcher walks these subtrees with them;
  // it needs only those whose byte the caller can take. Sorted by byte.
  std::vector<std::pair<uint8_t, int32_t>> escapes;
  // All other tokens are rejected under any caller.
};

// Walks the whole trie from `state`. Where the state loops over text
// (grammar/text_tokens.h), subtrees of text tokens are taken whole.
Result<LocalTokenSets> WalkFromState(const CompiledGrammar& g, int32_t state);

// Sets in `mask` the bits of the tokens in the trie subtree of `node` whose
// bytes from that node's own on some stack of `tops` survives (`tops`:
// closed, in `arena`; the node's ancestors are taken as consumed). The
// arena is left as it was.
Status WalkSubtree(const CompiledGrammar& g, StackArena* arena, std::span<const int32_t> tops, int32_t node,
                   std::span<uint32_t> mask);

}  // namespace llmhost::grammar
