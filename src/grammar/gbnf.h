// GBNF, the grammar format of llama.cpp (`grammar` requests, vLLM's
// guided_grammar): rules `name ::= body` with literals "...", classes
// [...] / [^...], `.`, groups, | alternation, * + ? {n} {n,} {n,m}
// repetition, comments from #, and token references <[123]> / <name>.
// The start rule is `root`.
#pragma once

#include <string_view>

#include "grammar/grammar.h"
#include "grammar/token_vocab.h"
#include "util/status.h"

namespace llmhost::grammar {

// InvalidArgument with the line and column of a syntax error, an undefined
// rule, or no `root`. `vocab` (may be null) resolves <name> special tokens.
Result<RuleId> AddGbnf(Grammar& grammar, std::string_view text, const TokenVocab* vocab = nullptr);

}  // namespace llmhost::grammar
