// A split/replace pattern from tokenizer.json: a literal string or a regex.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

namespace llmhost::tok {

using Range = std::pair<size_t, size_t>;  // byte offsets [first, second)

class Pattern {
 public:
  static Result<Pattern> FromSpec(const PatternSpec& spec);
  static Pattern Literal(std::string text) {
    Pattern p;
    p.literal_ = std::move(text);
    return p;
  }

  // Leftmost non-overlapping matches in valid UTF-8 `text`.
  std::vector<Range> FindAll(std::string_view text) const;
  // Replaces every match with `content` (taken literally).
  std::string ReplaceAll(std::string_view text, std::string_view content) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;  // set for regex patterns
};

}  // namespace llmhost::tok
