// ConstraintTracker: one choice's walk through its output constraint
// (engine/request.h: OutputConstraint): the grammar::Matcher, the free think
// block that may come first, and the mask of the next token.
//
// States: kOpening (the output so far may still become the think block's
// open marker or a start of the grammar: two hypotheses, each dropped when a
// token does not continue it; the mask is the union of theirs), kFree
// (inside the think block: no mask; the decoded text is watched for its
// close; the mask allows every token but EOS: the output must still reach
// the grammar), kConstrained (the matcher's mask applies).
//
// Thread safety: owned by its Sequence on the executor thread; PrepareMask
// may run on the mask worker while the executor runs the forward pass (the
// executor does not touch the tracker until MaskWorker::Wait returns).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost {

class ConstraintTracker {
 public:
  explicit ConstraintTracker(const OutputConstraint& constraint);

  // Inside the free think block.
  bool in_think() const { return state_ == State::kFree; }
  // Fills the next token's mask (once per token; no-op when ready). A
  // matcher error is kept in mask_status().
  void PrepareMask();
  bool mask_ready() const { return mask_ready_; }
  const Status& mask_status() const { return mask_status_; }
  // Bit id set: the token may come next. Valid once PrepareMask ran.
  std::span<const uint32_t> mask() const { return mask_; }

  // The chosen token: advances the matcher (InvalidArgument when the grammar
  // does not allow it: a token the engine forced) or, at the start, the
  // think block's open marker.
  Status AcceptToken(int32_t id);
  // The text the token decoded to: inside the think block, watched for its
  // close, after which the grammar starts (with the bytes that follow the
  // close in the same piece: InvalidArgument when the grammar refuses them).
  Status OnText(std::string_view text);
  // The tokens the grammar forces next, as fast-forward appends them
  // (engine/forced_tokens.h); empty outside the grammar or where it leaves
  // a choice.
  std::vector<int32_t> ForcedTokens(const Tokenizer& tokenizer) const;
  // The grammar can go no further: the output is complete.
  bool terminated() const { return state_ == State::kConstrained && matcher_.IsTerminated(); }

 private:
  enum class State { kOpening, kFree, kConstrained };
  // kOpening: `id` continues the open marker after opened_ (its bytes and
  // the rest of the marker: one a start of the other).
  bool ContinuesOpen(int32_t id) const;

  std::shared_ptr<const grammar::TokenVocab> vocab_;
  grammar::Matcher matcher_;
  grammar::Matcher initial_;  // the grammar's start, for after the think block
  State state_;
  bool grammar_alive_ = true;  // kOpening: the output so far is a start of the grammar
  std::string open_;
  int32_t open_id_;
  std::string opened_;  // kOpening: the open marker's bytes written so far
  std::string close_;
  std::string tail_;  // kFree: the last bytes seen (a close split across tokens)
  std::vector<uint32_t> mask_;
  bool mask_ready_ = false;
  Status mask_status_;
};

}  // namespace llmhost
