// The character classes of ECMAScript regular expressions (without the `i`
// flag): \d \w \s and `.`, as sets of code points.
#pragma once

#include "grammar/codepoint_set.h"

namespace llmhost::grammar {

CodepointSet RegexDigits();      // \d: [0-9]
CodepointSet RegexWordChars();   // \w: [A-Za-z0-9_]
CodepointSet RegexWhitespace();  // \s: WhiteSpace and LineTerminator
CodepointSet RegexDot();         // `.`: all but \n \r U+2028 U+2029

}  // namespace llmhost::grammar
