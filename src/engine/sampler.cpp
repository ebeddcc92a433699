#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

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

Status ValidateSamplingParams(const SamplingParams& p) {
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
  return Status::OK();
}

Sampler::Sampler(const SamplingParams& params, std::span<const int32_t> prompt, int64_t vocab)
    : params_(params), vocab_(vocab), rng_(params.seed ? *params.seed : FreshSeed()) {
  repetition_ = params_.repetition_penalty != 1.0;
  additive_ = params_.presence_penalty != 0.0 || params_.frequency_penalty != 0.0;
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
}

double Sampler::Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::Draw(const std::vector<float>& z) {
  const int64_t V = vocab_;
  // Higher logit first; the lower id first among equals.
  auto better = [&z](int32_t a, int32_t b) {
    const float za = z[static_cast<size_t>(a)], zb = z[static_cast<size_t>(b)];
    return za > zb || (za == zb && a < b);
  };
  if (params_.temperature <= 0) {
    int32_t best = 0;
    for (int32_t i = 1; i < V; ++i) {
      if (better(i, best)) best = i;
    }
    return best;
  }
  cand_.resize(static_cast<size_t>(V));
  std::iota(cand_.begin(), cand_.end(), 0);
  size_t sorted = 0;  // cand_[0, sorted) is in `better` order, and before the rest
  if (params_.top_k > 0 && params_.top_k < V) {
    const auto k = static_cast<size_t>(params_.top_k);
    std::partial_sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(k), cand_.end(), better);
    cand_.resize(k);
    sorted = k;
  }
  float m = z[static_cast<size_t>(cand_[0])];
  for (int32_t id : cand_) m = std::max(m, z[static_cast<size_t>(id)]);
  if (!(m > -std::numeric_limits<float>::infinity())) return *std::min_element(cand_.begin(), cand_.end());
  // Weights exp((z - max) / T): the top candidate weighs exactly 1 (also
  // when 1 / T overflows for a tiny temperature).
  w_.resize(static_cast<size_t>(V));
  const double inv_t = 1.0 / params_.temperature;
  double total = 0;
  for (int32_t id : cand_) {
    const float zi = z[static_cast<size_t>(id)];
    const double w = zi == m ? 1.0 : std::exp((static_cast<double>(zi) - m) * inv_t);
    w_[static_cast<size_t>(id)] = w;
    total += w;
  }
  if (params_.top_p < 1) {
    // Keep the most likely tokens while the mass before each is < top_p.
    // Sort only as far as needed: a short prefix usually holds the mass.
    const double target = params_.top_p * total;
    size_t n = std::min<size_t>(cand_.size(), 64);
    for (;;) {
      if (n > sorted) {
        std::partial_sort(cand_.begin() + static_cast<ptrdiff_t>(sorted),
                          cand_.begin() + static_cast<ptrdiff_t>(n), cand_.end(), better);
        sorted = n;
      }
      double cum = 0;
      size_t keep = 0;
      while (keep < n && cum < target) cum += w_[static_cast<size_t>(cand_[keep++])];
      if (cum >= target || n == cand_.size()) {
        cand_.resize(keep);
        total = cum;
        break;
      }
      n = std::min(cand_.size(), n * 4);
    }
  }
  if (params_.min_p > 0) {
    // Relative to the most likely token, whose weight is 1.
    const double threshold = params_.min_p;
    size_t out = 0;
    total = 0;
    for (int32_t id : cand_) {
      const double w = w_[static_cast<size_t>(id)];
      if (w >= threshold) {
        cand_[out++] = id;
        total += w;
      }
    }
    cand_.resize(out);
  }
  double u = Uniform() * total;
  for (int32_t id : cand_) {
    u -= w_[static_cast<size_t>(id)];
    if (u < 0) return id;
  }
  return cand_.back();  // rounding left u >= 0: the last candidate
}

void Sampler::FillLogprobs(const float* logits, SampledToken* out) const {
  const int64_t V = vocab_;
  float m = logits[0];
  for (int64_t i = 1; i < V; ++i) m = std::max(m, logits[i]);
  double s = 0;
  for (int64_t i = 0; i < V; ++i) s += std::exp(static_cast<double>(logits[i]) - m);
  const double lse = m + std::log(s);
  out->logprob = static_cast<float>(logits[out->id] - lse);
  const auto n = static_cast<size_t>(std::min<int64_t>(params_.top_logprobs, V));
  if (n == 0) return;
  std::vector<int32_t> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(),
                    [logits](int32_t a, int32_t b) {
                      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                    });
  for (size_t i = 0; i < n; ++i) {
    out->top.push_back({ids[i], static_cast<float>(logits[ids[i]] - lse)});
  }
}

SampledToken Sampler::Sample(const float* logits) {
  // NaN / +inf rows (a broken model) must not break the orderings below.
  raw_.assign(logits, logits + vocab_);
  for (float& v : raw_) {
    if (std::isnan(v)) v = -std::numeric_limits<float>::infinity();
    else if (v == std::numeric_limits<float>::infinity()) v = std::numeric_limits<float>::max();
  }
  z_ = raw_;
  ApplyPenalties(z_);
  SampledToken out;
  out.id = Draw(z_);
  if (params_.logprobs || params_.top_logprobs > 0) FillLogprobs(raw_.data(), &out);
  Accept(out.id);
  return out;
}

}  // namespace llmhost
