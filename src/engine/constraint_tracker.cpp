#include "engine/constraint_tracker.h"

#include <string>

namespace llmhost {

ConstraintTracker::ConstraintTracker(const OutputConstraint& c)
    : matcher_(c.grammar),
      vocab_(c.vocab->size()),
      state_(State::kConstrained),
      open_id_(-1),
      mask_(grammar::MaskWords(c.vocab->size()), 0) {
  if (c.think) {
    close_ = c.think->close;
    if (c.think->starts_open) {
      state_ = State::kFree;
    } else if (c.think->open_id >= 0 && static_cast<size_t>(c.think->open_id) < vocab_) {
      state_ = State::kOpening;
      open_id_ = c.think->open_id;
    }
  }
}

void ConstraintTracker::PrepareMask() {
  if (mask_ready_ || !masking()) return;
  mask_status_ = matcher_.FillNextTokenMask(mask_);
  if (state_ == State::kOpening) mask_[static_cast<size_t>(open_id_) >> 5] |= 1u << (open_id_ & 31);
  mask_ready_ = true;
}

Status ConstraintTracker::AcceptToken(int32_t id) {
  mask_ready_ = false;
  if (state_ == State::kFree) return Status::OK();
  if (state_ == State::kOpening) {
    if (id == open_id_) {
      state_ = State::kFree;
      return Status::OK();
    }
    state_ = State::kConstrained;
  }
  Status st = matcher_.AcceptToken(id);
  if (!st.ok()) return st.WithContext("output constraint: token " + std::to_string(id));
  return Status::OK();
}

Status ConstraintTracker::OnText(std::string_view text) {
  if (state_ != State::kFree || text.empty()) return Status::OK();
  tail_.append(text);
  const size_t at = tail_.find(close_);
  if (at == std::string::npos) {
    // Only a close split across tokens needs what came before.
    if (tail_.size() > close_.size()) tail_.erase(0, tail_.size() - close_.size());
    return Status::OK();
  }
  state_ = State::kConstrained;
  // What follows the close came with this piece (the close was not whole before it).
  const std::string rest = tail_.substr(at + close_.size());
  tail_.clear();
  if (!rest.empty() && !matcher_.AcceptBytes(rest)) {
    return Status::InvalidArgument("output constraint: the text after the think block's close ('" + rest +
                                   "') does not match the grammar");
  }
  return Status::OK();
}

}  // namespace llmhost
