// Sampler: picks each generated token of one request from its logits row.
//
// Order, as Hugging Face transformers applies its processors: penalties
// (repetition over prompt + output, presence / frequency over output), the
// logit bias, an output constraint's token mask (disallowed ids: -inf), then
// temperature, top_k, top_p, min_p, and a draw from what is left.
//
// The draw after the penalties, bias and mask is cpu::RowDraw's, the one a
// backend makes where the logits are (Backend::PickRows): a row with nothing
// before it (pickable()) may come back from the step as its token alone.
// Temperature 0 is greedy: the argmax of the penalised logits, the lowest id
// on ties (without penalties, bias, mask or logprobs: one read of the row, no
// cleaned copy). Every draw comes from the request's own generator, seeded by
// `seed` (or from std::random_device when unset), so a seeded request gives
// the same tokens whatever else runs beside it.
//
// Logprobs are those of the model's raw distribution, log_softmax(logits)
// before penalties, temperature and filters (vLLM's default), for the
// chosen token and the `top_logprobs` most likely ones (lowest id first on
// ties).
//
// Not thread-safe: one Sampler per request, used by the executor thread.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "backend/cpu/row_draw.h"
#include "backend/row_pick.h"
#include "util/status.h"

namespace llmhost {

inline constexpr int32_t kMaxTopLogprobs = 20;

struct SamplingParams {
  double temperature = 1.0;          // 0: greedy
  double top_p = 1.0;                // (0, 1]; 1: off
  int32_t top_k = 0;                 // 0: off
  double min_p = 0.0;                // [0, 1]; 0: off
  double repetition_penalty = 1.0;   // > 0; 1: off (HF: divides positive logits, multiplies negative)
  double presence_penalty = 0.0;     // [-2, 2]; subtracted once per token present in the output
  double frequency_penalty = 0.0;    // [-2, 2]; subtracted per occurrence in the output
  // Added to the logits of these ids after the penalties (OpenAI logit_bias;
  // -100 bans a token in practice, +100 all but forces it).
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::optional<uint64_t> seed;
  bool logprobs = false;             // report the chosen token's logprob
  int32_t top_logprobs = 0;          // [0, 20]: also the n most likely tokens (needs logprobs)
};

// InvalidArgument naming the field ("top_p must be in (0, 1], got 0") for a
// value out of range or not finite. `vocab` > 0 also checks logit_bias ids.
Status ValidateSamplingParams(const SamplingParams& p, int64_t vocab = 0);

inline constexpr size_t kMaxLogitBias = 1024;

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

struct SampledToken {
  int32_t id = 0;
  float logprob = 0;                 // when params.logprobs
  std::vector<TokenLogprob> top;     // params.top_logprobs entries, most likely first
};

class Sampler {
 public:
  // `prompt` seeds the repetition penalty's token set; `vocab` is the logits
  // row length.
  Sampler(const SamplingParams& params, std::span<const int32_t> prompt, int64_t vocab);

  // Picks a token from a [vocab] row of raw logits and records it as output
  // (for the penalties of later calls). `allowed` (empty: every id): a
  // bitmask, bit id of word id / 32; ids past its words are not allowed. It
  // must allow at least one id below vocab.
  SampledToken Sample(const float* logits, std::span<const uint32_t> allowed = {});

  // Records a token of the output without sampling it (a resumed request).
  void Accept(int32_t id);

  // Nothing to apply before the draw (no penalty, bias or logprobs) and a
  // top_k a backend takes: the caller may have the row's token picked where
  // the logits are (Backend::PickRows) with Pick()'s RowPick, then hand the
  // id to TakePicked. A Sample after an unanswered Pick draws at the same u.
  bool pickable() const { return pickable_; }
  RowPick Pick();
  SampledToken TakePicked(int32_t id);

  // Records `id` as the next output token without drawing one (a token the
  // engine writes itself: a think block's forced close); its logprobs come
  // from `logits` when asked for.
  SampledToken Force(const float* logits, int32_t id);

  const SamplingParams& params() const { return params_; }

 private:
  void ApplyPenalties(std::vector<float>& z) const;
  void ApplyMask(std::span<const uint32_t> allowed, std::vector<float>& z) const;
  // The filters and the draw on a cleaned row, at the u of an unanswered
  // Pick if there is one.
  int32_t Draw(const std::vector<float>& z);
  void FillLogprobs(const float* logits, SampledToken* out);
  double Uniform();  // [0, 1), 53 bits, the same on every platform

  SamplingParams params_;
  int64_t vocab_;
  std::mt19937_64 rng_;
  bool repetition_ = false, additive_ = false;
  bool plain_greedy_ = false;         // greedy, no penalty, bias or logprobs: Sample reads the row once
  bool pickable_ = false;
  std::optional<RowPick> pending_;    // a Pick whose id has not come back
  cpu::RowDraw row_draw_;
  std::vector<uint8_t> seen_;         // [vocab] prompt or output contains the id
  std::vector<int32_t> seen_ids_;     // the ids with seen_ set
  std::vector<int32_t> out_count_;    // [vocab] occurrences in the output
  std::vector<int32_t> out_ids_;      // the ids with out_count_ > 0
  // Scratch reused across calls.
  std::vector<float> raw_, z_, w_;
  std::vector<int32_t> cand_;
};

}  // namespace llmhost
