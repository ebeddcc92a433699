// Byte-level helpers the output formats share: matching a literal that may be
// cut off by the end of the text so far, and skipping whitespace.
#pragma once

#include <cstddef>
#include <string_view>

namespace llmhost::markup {

enum class Match { kYes, kNo, kNeedMore };

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// Does `lit` occur at s[i]? kNeedMore when s ends inside a prefix of it.
inline Match MatchAt(std::string_view s, size_t i, std::string_view lit) {
  if (i > s.size()) return Match::kNeedMore;
  std::string_view rest = s.substr(i);
  if (rest.size() >= lit.size()) return rest.substr(0, lit.size()) == lit ? Match::kYes : Match::kNo;
  return lit.substr(0, rest.size()) == rest ? Match::kNeedMore : Match::kNo;
}

// The length of the longest proper suffix of `s` that is a prefix of `lit`:
// bytes that must be held back because they may yet become `lit`.
inline size_t PartialSuffix(std::string_view s, std::string_view lit) {
  size_t most = lit.size() > 0 ? lit.size() - 1 : 0;
  for (size_t k = most < s.size() ? most : s.size(); k > 0; --k) {
    if (s.substr(s.size() - k) == lit.substr(0, k)) return k;
  }
  return 0;
}

}  // namespace llmhost::markup

namespace llmhost::markup {

enum class Find { kFound, kNeedMore, kTooFar };

// Looks for `stop` in s[from, from + limit]: markup such as a name or a key
// is short, so text that runs on without it is not that markup.
inline Find FindWithin(std::string_view s, size_t from, std::string_view stop, size_t limit, size_t* at) {
  size_t pos = s.find(stop, from);
  if (pos != std::string_view::npos && pos - from <= limit) {
    *at = pos;
    return Find::kFound;
  }
  if (pos != std::string_view::npos || s.size() - from > limit + stop.size()) return Find::kTooFar;
  return Find::kNeedMore;
}

inline std::string_view TrimSpace(std::string_view t) {
  while (!t.empty() && IsSpace(t.front())) t.remove_prefix(1);
  while (!t.empty() && IsSpace(t.back())) t.remove_suffix(1);
  return t;
}

}  // namespace llmhost::markup
