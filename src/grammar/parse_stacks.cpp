#include "grammar/parse_stacks.h"

#include <algorithm>

namespace llmhost::grammar {

uint64_t StackArena::Hash(int32_t state, int32_t parent) {
  uint64_t x = (static_cast<uint64_t>(static_cast<uint32_t>(state)) << 32) | static_cast<uint32_t>(parent);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

void StackArena::Clear() {
  frames_.clear();
  table_.assign(64, -1);
  mask_ = 63;
}

void StackArena::Rehash(size_t capacity) {
  table_.assign(capacity, -1);
  mask_ = capacity - 1;
  for (size_t i = 0; i < frames_.size(); ++i) {
    size_t slot = Hash(frames_[i].state, frames_[i].parent) & mask_;
    while (table_[slot] >= 0) slot = (slot + 1) & mask_;
    table_[slot] = static_cast<int32_t>(i);
  }
}

int32_t StackArena::Intern(int32_t state, int32_t parent) {
  size_t slot = Hash(state, parent) & mask_;
  while (table_[slot] >= 0) {
    const Frame& f = frames_[table_[slot]];
    if (f.state == state && f.parent == parent) return table_[slot];
    slot = (slot + 1) & mask_;
  }
  int32_t index = static_cast<int32_t>(frames_.size());
  frames_.push_back({state, parent});
  table_[slot] = index;
  if (frames_.size() * 2 > table_.size()) Rehash(table_.size() * 2);
  return index;
}

void StackArena::Truncate(size_t mark) {
  while (frames_.size() > mark) {
    const Frame& f = frames_.back();
    int32_t index = static_cast<int32_t>(frames_.size() - 1);
    size_t hole = Hash(f.state, f.parent) & mask_;
    while (table_[hole] != index) hole = (hole + 1) & mask_;
    // Backward-shift deletion: move later entries of the probe run into
    // the hole when their home slot does not lie after the hole.
    for (size_t next = (hole + 1) & mask_; table_[next] >= 0; next = (next + 1) & mask_) {
      const Frame& g = frames_[table_[next]];
      size_t home = Hash(g.state, g.parent) & mask_;
      bool home_in_range = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
      if (home_in_range) continue;
      table_[hole] = table_[next];
      hole = next;
    }
    table_[hole] = -1;
    frames_.pop_back();
  }
}

bool StackStepper::Seen(int32_t f) {
  if (static_cast<size_t>(f) >= seen_.size()) seen_.resize(std::max<size_t>(arena_.size(), f + 1) * 2, 0);
  if (seen_[f] == stamp_) return true;
  seen_[f] = stamp_;
  return false;
}

Status StackStepper::Close(std::span<const int32_t> raw, std::vector<int32_t>* tops, CloseResult* result) {
  if (++stamp_ == 0) {  // wrapped: old marks could collide
    std::fill(seen_.begin(), seen_.end(), 0);
    stamp_ = 1;
  }
  size_t first_top = tops->size();
  work_.assign(raw.begin(), raw.end());
  while (!work_.empty()) {
    int32_t f = work_.back();
    work_.pop_back();
    if (Seen(f)) continue;
    StackArena::Frame frame = arena_.frame(f);
    if (g_.HasEdges(frame.state)) {
      tops->push_back(f);
      if (tops->size() - first_top > static_cast<size_t>(g_.options().max_stacks))
        return Status::ResourceExhausted("grammar: more than " + std::to_string(g_.options().max_stacks) +
                                         " parse stacks (the grammar is too ambiguous)");
    }
    for (const CompiledGrammar::CallEdge& e : g_.call_edges(frame.state)) {
      int32_t resume = arena_.Intern(e.next, frame.parent);
      work_.push_back(arena_.Intern(e.callee_start, resume));
    }
    if (g_.state(frame.state).accepting) {
      if (frame.parent == kBottom) result->can_end = true;
      else if (frame.parent == kOutside) result->escaped = true;
      else work_.push_back(frame.parent);
    }
    if (arena_.size() > kMaxFrames)
      return Status::ResourceExhausted("grammar: parse stacks over " + std::to_string(kMaxFrames) + " frames");
  }
  return Status::OK();
}

void StackStepper::StepByte(std::span<const int32_t> tops, uint8_t b, std::vector<int32_t>* raw) {
  for (int32_t f : tops) {
    StackArena::Frame frame = arena_.frame(f);
    int32_t next = g_.NextOnByte(frame.state, b);
    if (next >= 0) raw->push_back(arena_.Intern(next, frame.parent));
  }
}

void StackStepper::StepToken(std::span<const int32_t> tops, int32_t token, std::vector<int32_t>* raw) {
  for (int32_t f : tops) {
    StackArena::Frame frame = arena_.frame(f);
    for (const CompiledGrammar::TokenEdge& e : g_.token_edges(frame.state))
      if (e.token == token) raw->push_back(arena_.Intern(e.next, frame.parent));
  }
}

}  // namespace llmhost::grammar
