// Jinja parser: tokens -> Program, following Jinja2's grammar and operator
// precedence. Unknown tags, filters and tests are errors here, as in Jinja2.
#pragma once

#include <memory>
#include <string_view>

#include "chat/jinja_ast.h"

namespace llmhost::jinja {

// Deepest nesting of expressions/statements the parser accepts.
constexpr int kMaxParseDepth = 100;

// Throws Error("TemplateSyntaxError", ...) with a line number.
std::unique_ptr<Program> ParseTemplate(std::string_view source);

}  // namespace llmhost::jinja
