// Jinja lexer, configured as transformers configures Jinja2: trim_blocks and
// lstrip_blocks on, `{%- -%}` / `{%+ +%}` whitespace control, comments and raw
// blocks, newlines normalised to "\n", one trailing newline dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmhost::jinja {

enum class TokType : uint8_t {
  kData,        // template text
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kVarBegin,    // {{
  kVarEnd,      // }}
  kName,
  kString,      // value: the decoded literal
  kInt,         // ival
  kFloat,       // fval
  kOp,          // value: "==", "(", "|", ...
  kEof,
};

struct Token {
  TokType type = TokType::kEof;
  int line = 1;
  std::string value;
  int64_t ival = 0;
  double fval = 0.0;
};

// Splits a template into tokens. Throws Error("TemplateSyntaxError") on
// malformed input (unclosed comment or string, unbalanced brackets, ...).
std::vector<Token> Tokenize(std::string_view source);

}  // namespace llmhost::jinja
