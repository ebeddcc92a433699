// ReasoningLimiter: watches one sequence's decoded output for its think
// block and says when the block has used its token budget, so that the
// engine forces the block's close (engine/request.h: ReasoningBudget).
//
// Text-based, so it does not matter how the markers were tokenized. Not
// thread-safe: one per Sequence, used by the executor thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request.h"

namespace llmhost {

class ReasoningLimiter {
 public:
  explicit ReasoningLimiter(ReasoningBudget budget);

  // After each generated token, with the text it decoded to (may be empty):
  // the ids to force next, once, when the budget ran out; else empty.
  std::vector<int32_t> OnToken(std::string_view text);
  bool inside() const { return state_ == State::kInside; }
  int64_t tokens_inside() const { return tokens_; }

 private:
  enum class State { kBefore, kInside, kDone };
  ReasoningBudget b_;
  State state_;
  std::string head_;  // kBefore: the output so far
  std::string tail_;  // kInside: the block's last bytes (a close split across tokens)
  int64_t tokens_ = 0;
};

}  // namespace llmhost
