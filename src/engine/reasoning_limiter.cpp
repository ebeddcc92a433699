#include "engine/reasoning_limiter.h"

namespace llmhost {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

ReasoningLimiter::ReasoningLimiter(ReasoningBudget budget)
    : b_(std::move(budget)), state_(b_.starts_open ? State::kInside : State::kBefore) {}

std::vector<int32_t> ReasoningLimiter::OnToken(std::string_view text) {
  if (state_ == State::kDone) return {};
  if (state_ == State::kBefore) {
    head_.append(text);
    size_t start = 0;
    while (start < head_.size() && IsSpace(head_[start])) ++start;
    std::string_view rest = std::string_view(head_).substr(start);
    if (rest.size() >= b_.open.size()) {
      if (rest.compare(0, b_.open.size(), b_.open) != 0) {
        state_ = State::kDone;  // the output does not start with a think block
        return {};
      }
      state_ = State::kInside;
      text = rest.substr(b_.open.size());
      tail_.assign(text);
      head_.clear();
      // The token that opened the block is not counted against it.
    } else {
      if (b_.open.compare(0, rest.size(), rest) != 0) state_ = State::kDone;
      return {};
    }
  } else {
    ++tokens_;
    tail_.append(text);
  }
  if (tail_.find(b_.close) != std::string::npos) {
    state_ = State::kDone;
    return {};
  }
  // Only a close split across tokens needs what came before.
  if (tail_.size() > b_.close.size()) tail_.erase(0, tail_.size() - b_.close.size());
  if (tokens_ >= b_.budget_tokens) {
    state_ = State::kDone;
    return b_.close_ids;
  }
  return {};
}

}  // namespace llmhost
