#include "tokenizer/pattern.h"

namespace llmhost::tok {

Result<Pattern> Pattern::FromSpec(const PatternSpec& spec) {
  Pattern p;
  if (spec.is_regex) {
    ASSIGN_OR_RETURN(p.regex_, Regex::Compile(spec.text));
  } else {
    p.literal_ = spec.text;
  }
  return p;
}

std::vector<Range> Pattern::FindAll(std::string_view text) const {
  if (regex_) return regex_->FindAll(text);
  std::vector<Range> out;
  if (literal_.empty()) return out;
  size_t pos = 0;
  while (true) {
    size_t at = text.find(literal_, pos);
    if (at == std::string_view::npos) break;
    out.emplace_back(at, at + literal_.size());
    pos = at + literal_.size();
  }
  return out;
}

std::string Pattern::ReplaceAll(std::string_view text, std::string_view content) const {
  std::vector<Range> matches = FindAll(text);
  if (matches.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (const Range& m : matches) {
    out.append(text.substr(prev, m.first - prev));
    out.append(content);
    prev = m.second;
  }
  out.append(text.substr(prev));
  return out;
}

}  // namespace llmhost::tok
