// Sequence: the scheduler's state of one request: its tokens and KV blocks,
// sampler, streaming detokenizer and stop-string matcher, and the events it
// sends. Internal to src/engine (the executor thread owns every Sequence).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "engine/constraint_tracker.h"
#include "engine/reasoning_limiter.h"
#include "engine/request.h"
#include "engine/sampler.h"
#include "engine/stop_strings.h"
#include "kv/prefix_cache.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace llmhost {

class Sequence {
 public:
  // `max_new`: tokens it may generate (already clamped to the context).
  // `tokenizer` may be null (ids only, no text); `eos` must outlive it.
  // `choice`: which of the request's choices this is (its events say so).
  Sequence(uint64_t id, GenerationRequest request, int64_t vocab, int64_t max_new,
           const Tokenizer* tokenizer, const std::vector<int32_t>* eos, int choice = 0);

  uint64_t id() const { return id_; }
  int choice() const { return choice_; }
  // The request's other choices, until this one's prompt is in and the
  // scheduler forks them (TakeForks). They end with this one if it ends first.
  void set_forks(std::vector<std::unique_ptr<Sequence>> forks) { forks_ = std::move(forks); }
  size_t forks() const { return forks_.size(); }
  std::vector<std::unique_ptr<Sequence>> TakeForks() { return std::move(forks_); }
  CachedSequence& cs() { return cs_; }
  const CachedSequence& cs() const { return cs_; }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t generated() const { return generated_; }
  // Tokens that must still run through the model before the next sample.
  int64_t pending() const { return static_cast<int64_t>(cs_.tokens.size()) - cs_.kv.length; }
  bool finished() const { return finished_; }
  const std::string& request_id() const { return req_.request_id; }
  // When the request reached the engine, and when this choice's first token
  // was sampled (the status page's age, TTFT and decode speed).
  void set_arrived(std::chrono::steady_clock::time_point t) { arrived_ = t; }
  std::chrono::steady_clock::time_point arrived() const { return arrived_; }
  const std::optional<std::chrono::steady_clock::time_point>& first_token() const { return first_token_; }

  // Set at the first admission: prompt positions reused from the cache.
  bool admitted_once() const { return admitted_once_; }
  void SetAdmitted(int64_t cached_tokens) {
    if (!admitted_once_) cached_tokens_ = cached_tokens;
    admitted_once_ = true;
  }

  // The logits row after the last pending token: samples (or, with no
  // budget left, finishes with kLength) and returns the token's event, the
  // last one final when it ends the request (finished() is then true). The
  // new id joins cs().tokens. A constrained choice samples under its
  // tracker's mask (computed here when the mask worker did not); the tokens
  // its grammar forces next follow at once, an event each, without
  // sampling (fast-forward, engine/forced_tokens.h): they join cs().tokens
  // and run through the model together at the next step. Where logprobs
  // are asked for, forced tokens go one a step instead, their logprobs
  // from that step's logits. The caller sends the events (after releasing
  // the blocks of a finished request, so that the pool is whole when the
  // client hears the end).
  std::vector<RequestEvent> OnLogits(const float* logits);
  // OnLogits in two halves, for rows that only draw from the sampler (no
  // constraint, no forced token, budget left: PlainDraw()): Draw touches
  // this sequence's sampler alone, so the rows of a step can be drawn on
  // several threads; OnDrawn then does the rest of OnLogits, in row order.
  bool PlainDraw() const;
  SampledToken Draw(const float* logits);
  // A PlainDraw row whose sampler has nothing to apply before its draw
  // (Sampler::pickable), so that the step may pick its token where the
  // logits are: Pick() is this step's RowPick (ForwardOutput::picks), and
  // TakePicked(id) then stands for Draw.
  bool Pickable() const;
  RowPick Pick();
  SampledToken TakePicked(int32_t id);
  std::vector<RequestEvent> OnDrawn(SampledToken tok);
  // The tracker whose mask the next sample needs, or null (unconstrained,
  // or a token forced next).
  ConstraintTracker* MaskJob();
  void Send(RequestEvent ev);

  // Sends a final event without a token (abort, error), and the same to the
  // choices not forked yet. No-op once finished.
  void Finish(FinishReason reason, Status error = Status::OK());

 private:
  bool IsStopToken(int32_t id) const;
  RequestEvent NewEvent() const;
  // Appends `tok` to the output: constraint, stop ids and strings, text.
  // Its event, final when it ends the request.
  RequestEvent Emit(SampledToken tok, bool logprobs);
  // After a token: what the output constraint forces next (see OnLogits).
  void FastForward(std::vector<RequestEvent>* events);
  // Ends `ev` (a constrained choice) with kError.
  void Fail(RequestEvent* ev, Status error);
  // The text still held by the decoder and the matcher, as the stream ends.
  void Drain(RequestEvent* ev);

  uint64_t id_;
  int choice_;
  GenerationRequest req_;
  int64_t max_new_;
  const std::vector<int32_t>* eos_;
  const Tokenizer* tokenizer_;  // may be null
  CachedSequence cs_;
  int64_t prompt_tokens_;
  int64_t generated_ = 0;
  int64_t cached_tokens_ = 0;
  bool admitted_once_ = false;
  bool finished_ = false;
  std::chrono::steady_clock::time_point arrived_ = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> first_token_;
  Sampler sampler_;
  std::unique_ptr<StreamDecoder> decoder_;
  StopStringMatcher stops_;
  std::optional<ReasoningLimiter> reasoning_;  // a think block's budget
  std::deque<int32_t> forced_;                 // ids to emit next instead of sampling
  std::optional<ConstraintTracker> constraint_;  // the output constraint's state (survives preemption)
  std::vector<std::unique_ptr<Sequence>> forks_;
};

}  // namespace llmhost
