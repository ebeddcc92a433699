// A compiled PCRE2 regular expression (UTF + UCP, JIT when available) that
// finds all non-overlapping matches, as the Oniguruma/Rust engines behind
// Hugging Face tokenizers do. Immutable after construction: FindAll may run on
// many threads at once (each call uses its own match data).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace llmhost::tok {

class Regex {
 public:
  // Compiles `pattern` (HF/Oniguruma syntax; translated where PCRE2 differs).
  static Result<std::shared_ptr<const Regex>> Compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Byte ranges [start, end) of all leftmost non-overlapping matches in a
  // valid UTF-8 `text`. Empty matches are reported; the search then moves on
  // by one character.
  std::vector<std::pair<size_t, size_t>> FindAll(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

// Escapes a literal string so that it matches itself as a pattern.
std::string RegexEscape(std::string_view literal);

}  // namespace llmhost::tok
