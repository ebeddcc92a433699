#include "grammar/plain_rows.h"

#include <span>

namespace llmhost::grammar {

PlainRows::PlainRows(const CompiledGrammar& g, int32_t start)
    : g_(g), state_{start}, slot_{-1}, accepting_{g.state(start).accepting} {
  row_of_.emplace(start, 0);
}

int32_t PlainRows::Build(int32_t row) {
  int32_t slot = static_cast<int32_t>(next_.size() / 256);
  slot_[row] = slot;
  next_.resize(next_.size() + 256, -1);
  int32_t s = state_[row];
  if (g_.state(s).byte_row < 0) return slot;
  std::span<const uint8_t> cls = g_.byte_classes(g_.state(s).rule);
  int32_t v = -1;
  for (int b = 0; b < 256; ++b) {
    if (b == 0 || cls[b] != cls[b - 1]) {  // a new class: its target once
      int32_t t = g_.NextOnClass(s, cls[b]);
      v = t < 0 ? -1 : -2 - t;
      if (t >= 0 && g_.call_edges(t).empty()) {
        if (auto it = row_of_.find(t); it != row_of_.end()) {
          v = it->second;
        } else if (state_.size() < kMaxRows) {
          v = static_cast<int32_t>(state_.size());
          row_of_.emplace(t, v);
          state_.push_back(t);
          slot_.push_back(-1);
          accepting_.push_back(g_.state(t).accepting);
        }
      }
    }
    next_[static_cast<size_t>(slot) * 256 + b] = v;
  }
  return slot;
}

}  // namespace llmhost::grammar
