// Jinja parser: tokens -> Program, following Jinja2's grammar and operator
// precedence. Unknown tags, filters and tests are errors here, as in Jinja2.
#pragma once

#include <memory>
#include <string_view>

#include "chat/jinja_ast.h"

namespace llmhost::jinja {

// Deepest nesting the parser accepts, in units of statement blocks and
// expression levels (a parenthesised sub-expression costs three): about what
// Jinja2 reaches before Python's recursion limit.
constexpr int kMaxParseDepth = 300;

// Throws Error("TemplateSyntaxError", ...) with a line number.
std::unique_ptr<Program> ParseTemplate(std::string_view source);

}  // namespace llmhost::jinja
