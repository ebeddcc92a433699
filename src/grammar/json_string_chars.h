// One code point as it may be written inside a JSON string literal: raw
// UTF-8 where JSON allows it, an escape where it must be escaped (" \ and
// control characters). Used by JSON Schema strings and by regexes compiled
// for a string's content (`pattern`).
#pragma once

#include "grammar/codepoint_set.h"
#include "grammar/grammar.h"

namespace llmhost::grammar {

// One code point of `set` inside a string literal. Characters that need no
// escape are accepted raw only (and '/' also as "\/"), so a string's escaped
// text maps back to exactly one code point sequence.
NodeId JsonStringChar(Grammar& g, const CodepointSet& set);
// Any one code point inside a string literal, raw or by any escape JSON
// allows (\uXXXX for any scalar value, surrogate pairs as one code point).
NodeId AnyJsonStringChar(Grammar& g);

}  // namespace llmhost::grammar
