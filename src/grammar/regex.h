// Regular expressions (ECMAScript syntax, as JSON Schema's `pattern` and
// vLLM's `guided_regex` use) compiled into a Grammar node that matches the
// whole of a string in the pattern's language.
//
// Supported: literals and escapes (\n \t \r \f \v \0 \xHH \uHHHH \u{...}
// \/ and escaped punctuation), `.` (any code point but line terminators),
// classes [...] with ranges and negation, \d \D \w \W \s \S, groups
// ( ) (?: ) and named groups, alternation |, quantifiers * + ? {n} {n,}
// {n,m} and their lazy forms (same language), anchors ^ and $ at the ends of
// the pattern. Not supported (InvalidArgument naming the construct and its
// offset): backreferences, lookaround, \b \B, anchors inside the pattern.
#pragma once

#include <string_view>

#include "grammar/grammar.h"
#include "util/status.h"

namespace llmhost::grammar {

struct RegexOptions {
  // JSON Schema's `pattern` is unanchored (it matches anywhere in the
  // string): with `search`, a pattern without ^ / $ is wrapped in .*
  // on that side. vLLM's guided_regex matches the whole text (search off).
  bool search = false;
};

Result<NodeId> AddRegex(Grammar& grammar, std::string_view pattern, const RegexOptions& options = {});

}  // namespace llmhost::grammar
