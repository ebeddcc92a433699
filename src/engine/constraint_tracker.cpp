#include "engine/constraint_tracker.h"

#include <algorithm>
#include <string>

#include "engine/forced_tokens.h"

namespace llmhost {

ConstraintTracker::ConstraintTracker(const OutputConstraint& c)
    : vocab_(c.vocab),
      matcher_(c.grammar),
      initial_(c.grammar),
      state_(State::kConstrained),
      open_id_(-1),
      mask_(grammar::MaskWords(c.vocab->size()), 0) {
  if (c.think) {
    close_ = c.think->close;
    if (c.think->starts_open) {
      state_ = State::kFree;
    } else if (!c.think->open.empty() || c.think->open_id >= 0) {
      state_ = State::kOpening;
      open_ = c.think->open;
      open_id_ = c.think->open_id;
    }
  }
}

bool ConstraintTracker::ContinuesOpen(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_->size()) return false;
  if (id == open_id_) return opened_.empty();
  const std::string_view rest = std::string_view(open_).substr(opened_.size());
  const std::string_view b = vocab_->bytes(id);
  if (b.empty() || rest.empty()) return false;
  return b.size() <= rest.size() ? rest.substr(0, b.size()) == b : b.substr(0, rest.size()) == rest;
}

void ConstraintTracker::PrepareMask() {
  if (mask_ready_) return;
  mask_status_ = Status::OK();
  if (state_ == State::kFree) {
    // Anything but the end: the think block must close and the grammar follow.
    const size_t n = vocab_->size();
    std::fill(mask_.begin(), mask_.end(), ~0u);
    if (n % 32) mask_.back() = (1u << (n % 32)) - 1;
    for (TokenId id : vocab_->eos_ids()) mask_[static_cast<size_t>(id) >> 5] &= ~(1u << (id & 31));
  } else if (state_ != State::kOpening || grammar_alive_) {
    mask_status_ = matcher_.FillNextTokenMask(mask_);
  } else {
    std::fill(mask_.begin(), mask_.end(), 0u);
  }
  if (state_ == State::kOpening) {
    // The marker's continuations: a scan of the vocabulary, for the few
    // tokens before the output has chosen between the two.
    const int32_t n = static_cast<int32_t>(vocab_->size());
    for (int32_t id = 0; id < n; ++id) {
      if (ContinuesOpen(id)) mask_[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
    }
  }
  mask_ready_ = true;
}

Status ConstraintTracker::AcceptToken(int32_t id) {
  mask_ready_ = false;
  if (state_ == State::kFree) return Status::OK();
  if (state_ == State::kOpening) {
    const bool grammar = grammar_alive_ && matcher_.AcceptToken(id).ok();
    if (ContinuesOpen(id)) {
      opened_ += id == open_id_ ? open_ : std::string(vocab_->bytes(id));
      if (id == open_id_ || opened_.size() >= open_.size()) {
        state_ = State::kFree;  // the think block opened: the grammar starts after it
        matcher_ = initial_;
      } else {
        grammar_alive_ = grammar;
      }
      return Status::OK();
    }
    state_ = State::kConstrained;
    if (grammar) return Status::OK();
    return Status::InvalidArgument("output constraint: token " + std::to_string(id) +
                                   " opens neither the think block nor the grammar");
  }
  Status st = matcher_.AcceptToken(id);
  if (!st.ok()) return st.WithContext("output constraint: token " + std::to_string(id));
  return Status::OK();
}

std::vector<int32_t> ConstraintTracker::ForcedTokens(const Tokenizer& tokenizer) const {
  if (state_ != State::kConstrained) return {};
  const std::string forced = matcher_.ForcedBytes();
  if (forced.empty()) return {};
  grammar::Matcher after = matcher_;
  if (!after.AcceptBytes(forced)) return {};
  return StableForcedTokens(tokenizer, *vocab_, forced, after);
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
  mask_ready_ = false;
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
