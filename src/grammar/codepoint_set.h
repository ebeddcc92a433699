// A set of Unicode scalar values as sorted, disjoint, non-adjacent ranges:
// what a regex class or a string's allowed characters compile from.
// Surrogates (D800-DFFF) are never members.
#pragma once

#include <algorithm>
#include <vector>

#include "grammar/grammar.h"

namespace llmhost::grammar {

class CodepointSet {
 public:
  CodepointSet() = default;
  static CodepointSet All() {
    CodepointSet s;
    s.Add(0, kMaxCodepoint);
    return s;
  }
  static CodepointSet Of(char32_t lo, char32_t hi) {
    CodepointSet s;
    s.Add(lo, hi);
    return s;
  }

  void Add(char32_t lo, char32_t hi) {
    if (lo > hi) return;
    // Split around the surrogate block.
    if (lo < 0xD800 && hi > 0xDFFF) {
      Insert(lo, 0xD7FF);
      Insert(0xE000, hi);
    } else if (lo >= 0xD800 && hi <= 0xDFFF) {
      return;
    } else {
      Insert(lo >= 0xD800 && lo <= 0xDFFF ? 0xE000 : lo, hi >= 0xD800 && hi <= 0xDFFF ? 0xD7FF : hi);
    }
  }
  void Add(const CodepointSet& other) {
    for (const auto& r : other.ranges_) Insert(r.lo, r.hi);
  }
  // Every scalar value not in this set.
  CodepointSet Complement() const {
    CodepointSet out;
    char32_t next = 0;
    for (const auto& r : ranges_) {
      if (r.lo > next) out.Add(next, r.lo - 1);
      next = r.hi + 1;
    }
    if (next <= kMaxCodepoint) out.Add(next, kMaxCodepoint);
    return out;
  }
  // this \ other = complement(complement(this) u other).
  CodepointSet Minus(const CodepointSet& other) const {
    CodepointSet out = Complement();
    out.Add(other);
    return out.Complement();
  }
  bool Contains(char32_t c) const {
    for (const auto& r : ranges_)
      if (c >= r.lo && c <= r.hi) return true;
    return false;
  }
  bool operator==(const CodepointSet&) const = default;
  bool empty() const { return ranges_.empty(); }
  const std::vector<CodepointRange>& ranges() const { return ranges_; }

 private:
  void Insert(char32_t lo, char32_t hi) {
    if (ranges_.empty() || lo > ranges_.back().hi + 1) {  // in order: the common case
      ranges_.push_back({lo, hi});
      return;
    }
    ranges_.push_back({lo, hi});
    std::sort(ranges_.begin(), ranges_.end(),
              [](const CodepointRange& a, const CodepointRange& b) { return a.lo < b.lo; });
    std::vector<CodepointRange> merged;
    for (const auto& r : ranges_) {
      if (!merged.empty() && r.lo <= merged.back().hi + 1) {
        merged.back().hi = std::max(merged.back().hi, r.hi);
      } else {
        merged.push_back(r);
      }
    }
    ranges_ = std::move(merged);
  }

  std::vector<CodepointRange> ranges_;
};

}  // namespace llmhost::grammar
