#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <string>

#include "backend/cpu/vec_math.h"

namespace llmhost {
namespace {

std::string Num(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

Status OutOfRange(const char* field, const char* range, double got) {
  return Status::InvalidArgument(std::string(field) + " must be " + range + ", got " + Num(got));
}

uint64_t FreshSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

Status ValidateSamplingParams(const SamplingParams& p, int64_t vocab) {
  if (!std::isfinite(p.temperature) || p.temperature < 0) {
    return OutOfRange("temperature", "a finite number >= 0", p.temperature);
  }
  if (!(p.top_p > 0 && p.top_p <= 1)) return OutOfRange("top_p", "in (0, 1]", p.top_p);
  if (p.top_k < 0) return OutOfRange("top_k", ">= 0 (0 disables it)", p.top_k);
  if (!(p.min_p >= 0 && p.min_p <= 1)) return OutOfRange("min_p", "in [0, 1]", p.min_p);
  if (!std::isfinite(p.repetition_penalty) || p.repetition_penalty <= 0) {
    return OutOfRange("repetition_penalty", "a finite number > 0", p.repetition_penalty);
  }
  if (!(p.presence_penalty >= -2 && p.presence_penalty <= 2)) {
    return OutOfRange("presence_penalty", "in [-2, 2]", p.presence_penalty);
  }
  if (!(p.frequency_penalty >= -2 && p.frequency_penalty <= 2)) {
    return OutOfRange("frequency_penalty", "in [-2, 2]", p.frequency_penalty);
  }
  if (p.top_logprobs < 0 || p.top_logprobs > kMaxTopLogprobs) {
    return OutOfRange("top_logprobs", "in [0, 20]", p.top_logprobs);
  }
  if (p.logit_bias.size() > kMaxLogitBias) {
    return Status::InvalidArgument("logit_bias must have at most " + std::to_string(kMaxLogitBias) + " entries, got " +
                                   std::to_string(p.logit_bias.size()));
  }
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0 || (vocab > 0 && id >= vocab)) {
      return Status::InvalidArgument("logit_bias: token id " + std::to_string(id) + " is not in the vocabulary [0, " +
                                     std::to_string(vocab) + ")");
    }
    if (!(bias >= -100 && bias <= 100)) return OutOfRange("logit_bias values", "in [-100, 100]", bias);
  }
  return Status::OK();
}

Sampler::Sampler(const SamplingParams& params, std::span<const int32_t> prompt, int64_t vocab)
    : params_(params), vocab_(vocab), rng_(params.seed ? *params.seed : FreshSeed()) {
  repetition_ = params_.repetition_penalty != 1.0;
  additive_ = params_.presence_penalty != 0.0 || params_.frequency_penalty != 0.0;
  pickable_ = !repetition_ && !additive_ && params_.logit_bias.empty() && !params_.logprobs &&
              params_.top_logprobs == 0 && params_.top_k <= kMaxPickTopK;
  plain_greedy_ = pickable_ && params_.temperature <= 0;
  const size_t v = static_cast<size_t>(vocab_);
  if (repetition_) {
    seen_.assign(v, 0);
    for (int32_t id : prompt) {
      if (id >= 0 && id < vocab_ && !seen_[static_cast<size_t>(id)]) {
        seen_[static_cast<size_t>(id)] = 1;
        seen_ids_.push_back(id);
      }
    }
  }
  if (additive_) out_count_.assign(v, 0);
}

void Sampler::Accept(int32_t id) {
  if (id < 0 || id >= vocab_) return;
  const size_t i = static_cast<size_t>(id);
  if (repetition_ && !seen_[i]) {
    seen_[i] = 1;
    seen_ids_.push_back(id);
  }
  if (additive_ && out_count_[i]++ == 0) out_ids_.push_back(id);
}

void Sampler::ApplyPenalties(std::vector<float>& z) const {
  if (repetition_) {
    const float rp = static_cast<float>(params_.repetition_penalty);
    for (int32_t id : seen_ids_) {
      float& l = z[static_cast<size_t>(id)];
      l = l > 0 ? l / rp : l * rp;
    }
  }
  if (additive_) {
    for (int32_t id : out_ids_) {
      const int32_t n = out_count_[static_cast<size_t>(id)];
      z[static_cast<size_t>(id)] -= static_cast<float>(params_.frequency_penalty * n +
                                                       params_.presence_penalty);
    }
  }
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id >= 0 && id < vocab_) z[static_cast<size_t>(id)] += bias;
  }
}

void Sampler::ApplyMask(std::span<const uint32_t> allowed, std::vector<float>& z) const {
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  const size_t v = static_cast<size_t>(vocab_);
  for (size_t w = 0; w * 32 < v; ++w) {
    const uint32_t bits = w < allowed.size() ? allowed[w] : 0;
    if (bits == ~0u) continue;
    const size_t end = std::min(v, w * 32 + 32);
    for (size_t i = w * 32; i < end; ++i) {
      if (!((bits >> (i & 31)) & 1u)) z[i] = kBanned;
    }
  }
}

double Sampler::Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

RowPick Sampler::Pick() {
  if (pending_) return *pending_;  // asked again before an answer: the same draw
  RowPick p;
  p.temperature = params_.temperature;
  p.top_p = params_.top_p;
  p.min_p = params_.min_p;
  p.top_k = params_.top_k;
  if (p.temperature > 0) p.u = Uniform();  // one draw a sampled token, wherever it is made
  pending_ = p;
  return p;
}

void Sampler::FillLogprobs(const float* logits, SampledToken* out) {
  const int64_t V = vocab_;
  const float m = cpu::MaxValue(logits, V);
  double lse = m;
  if (m > -std::numeric_limits<float>::infinity()) {
    w_.resize(static_cast<size_t>(V));
    lse += std::log(cpu::ExpShifted(logits, V, m, 1.0f, w_.data()));
  }
  out->logprob = static_cast<float>(logits[out->id] - lse);
  const auto n = static_cast<size_t>(std::min<int64_t>(params_.top_logprobs, V));
  cpu::TopIndices(logits, V, n, &cand_);
  for (int32_t id : cand_) out->top.push_back({id, static_cast<float>(logits[id] - lse)});
}

int32_t Sampler::Draw(const std::vector<float>& z) {
  const RowPick p = Pick();  // a pending one's u, or a fresh draw
  pending_.reset();
  return row_draw_.Draw(z.data(), vocab_, p);
}

SampledToken Sampler::TakePicked(int32_t id) {
  pending_.reset();
  SampledToken out;
  out.id = id;
  Accept(out.id);
  return out;
}

SampledToken Sampler::Sample(const float* logits, std::span<const uint32_t> allowed) {
  // NaN / +inf rows (a broken model) must not break the orderings below.
  if (plain_greedy_ && allowed.empty()) {
    // The argmax of the raw row is the cleaned row's where its largest is
    // finite; otherwise (+inf, or nothing but -inf and NaN) the path below.
    if (const int64_t id = cpu::FiniteArgMax(logits, vocab_); id >= 0) return TakePicked(static_cast<int32_t>(id));
  }
  const bool want_logprobs = params_.logprobs || params_.top_logprobs > 0;
  const size_t v = static_cast<size_t>(vocab_);
  z_.resize(v);
  if (want_logprobs) {
    raw_.resize(v);
    cpu::SanitizeLogits(logits, raw_.data(), vocab_);
    std::memcpy(z_.data(), raw_.data(), v * sizeof(float));
  } else {
    cpu::SanitizeLogits(logits, z_.data(), vocab_);
  }
  ApplyPenalties(z_);
  if (!allowed.empty()) ApplyMask(allowed, z_);
  SampledToken out;
  out.id = Draw(z_);
  if (want_logprobs) FillLogprobs(raw_.data(), &out);
  Accept(out.id);
  return out;
}

SampledToken Sampler::Force(const float* logits, int32_t id) {
  SampledToken out;
  out.id = id;
  if (params_.logprobs || params_.top_logprobs > 0) {
    raw_.resize(static_cast<size_t>(vocab_));
    cpu::SanitizeLogits(logits, raw_.data(), vocab_);
    FillLogprobs(raw_.data(), &out);
  }
  Accept(id);
  return out;
}

}  // namespace llmhost
