// The regex compiler behind AddRegex, with a choice of how characters are
// written: as raw UTF-8 (a whole text) or as the content of a JSON string
// literal (JSON Schema's `pattern`, where " \ and controls are escaped).
#pragma once

#include <string_view>

#include "grammar/codepoint_set.h"
#include "grammar/grammar.h"
#include "util/status.h"

namespace llmhost::grammar {

enum class RegexText { kUtf8, kJsonString };

inline constexpr size_t kMaxPatternBytes = 1 << 16;
inline constexpr int kMaxRegexNesting = 100;

// `search`: a top-level alternative without ^ (or $) may have any text
// before (or after) its match, as ECMAScript's RegExp.test. `excluded`:
// code points no character class or literal may match (a subset of the
// pattern's language: bare text inside markup avoids the markup's '<').
Result<NodeId> CompileRegex(Grammar& g, std::string_view pattern, bool search, RegexText text,
                            const CodepointSet& excluded = {});

}  // namespace llmhost::grammar
