#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
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
  plain_greedy_ = params_.temperature <= 0 && !repetition_ && !additive_ && params_.logit_bias.empty() &&
                  !params_.logprobs && params_.top_logprobs == 0;
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

namespace {

// Higher logit first; the lower id first among equals.
struct Better {
  const float* z;
  bool operator()(int32_t a, int32_t b) const { return z[a] > z[b] || (z[a] == z[b] && a < b); }
};

// Buckets of positive float weights by their bit pattern's top 14 bits (the
// exponent and 5 mantissa bits: 32 buckets an octave, each 2.2% wide): the
// patterns of positive floats order like their values, so a higher bucket
// holds only larger weights. Weights are in [0, 1]: buckets [0, 4065).
constexpr int kBucketShift = 18;
constexpr size_t kBuckets = (0x3F800000u >> kBucketShift) + 1;
constexpr int kHistograms = 4;       // interleaved, so that neighbours do not wait on one another
constexpr int64_t kDrawBlock = 256;  // the draw finds its block by block sums, then scans it

inline uint32_t BucketOf(float w) {
  uint32_t bits;
  std::memcpy(&bits, &w, sizeof(bits));
  return bits >> kBucketShift;
}

// A key whose ascending order is Better's: the logit descending (as its
// bits made to order like the values, -0 as +0), then the id ascending.
// Sorting the keys themselves avoids Better's two indirect loads a comparison.
inline uint64_t BetterKey(float z, int32_t id) {
  uint32_t bits;
  const float v = z + 0.0f;  // -0 -> +0: Better sees them equal
  std::memcpy(&bits, &v, sizeof(bits));
  const uint32_t ordered = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);  // ascending like v
  return (static_cast<uint64_t>(~ordered) << 32) | static_cast<uint32_t>(id);
}

inline float BucketFloor(size_t bucket) {
  const uint32_t bits = static_cast<uint32_t>(bucket) << kBucketShift;
  float w;
  std::memcpy(&w, &bits, sizeof(w));
  return w;
}

}  // namespace

int32_t Sampler::Draw(const std::vector<float>& z) {
  const int64_t V = vocab_;
  if (params_.temperature <= 0) return static_cast<int32_t>(cpu::ArgMax(z.data(), V));  // lowest id on ties
  const float m = cpu::MaxValue(z.data(), V);
  if (!(m > -std::numeric_limits<float>::infinity())) return 0;  // every token banned: the lowest id
  // Weights exp((z - max) / T): the top candidate weighs exactly 1 (also
  // when 1 / T overflows for a tiny temperature).
  const double inv_t_d = 1.0 / params_.temperature;
  const float inv_t = inv_t_d > std::numeric_limits<float>::max() ? std::numeric_limits<float>::infinity()
                                                                   : static_cast<float>(inv_t_d);
  if (params_.top_k > 0 && params_.top_k < V) return DrawTopK(z, m, inv_t);
  w_.resize(static_cast<size_t>(V));
  const double all = cpu::ExpShifted(z.data(), V, m, inv_t, w_.data());
  float lo = 0;      // weights below are dropped
  size_t drop = 0;   // cand_[drop, end): the crossing bucket's members past the top_p cut
  if (params_.top_p < 1) {
    // The smallest set of most likely tokens whose mass reaches top_p: whole
    // buckets from the top while they stay below it, then the crossing
    // bucket sorted (it is small: a 2.2% band of weights).
    bucket_mass_.assign(kBuckets * kHistograms, 0.0);
    double* h = bucket_mass_.data();
    int64_t i = 0;
    for (; i + kHistograms <= V; i += kHistograms) {
      for (int k = 0; k < kHistograms; ++k) {
        const float w = w_[static_cast<size_t>(i + k)];
        h[static_cast<size_t>(k) * kBuckets + BucketOf(w)] += w;
      }
    }
    for (; i < V; ++i) h[BucketOf(w_[static_cast<size_t>(i)])] += w_[static_cast<size_t>(i)];
    const double target = params_.top_p * all;
    double above = 0;
    size_t cross = kBuckets - 1;
    for (;; --cross) {
      double mass = 0;
      for (int k = 0; k < kHistograms; ++k) mass += h[static_cast<size_t>(k) * kBuckets + cross];
      if (above + mass >= target || cross == 0) break;
      above += mass;
    }
    cand_.clear();
    cpu::CollectBand(w_.data(), V, BucketFloor(cross),
                     cross + 1 < kBuckets ? BucketFloor(cross + 1) : std::numeric_limits<float>::infinity(),
                     &cand_);
    keys_.resize(cand_.size());
    for (size_t j = 0; j < cand_.size(); ++j) keys_[j] = BetterKey(z[static_cast<size_t>(cand_[j])], cand_[j]);
    std::sort(keys_.begin(), keys_.end());
    for (size_t j = 0; j < cand_.size(); ++j) cand_[j] = static_cast<int32_t>(keys_[j] & 0xffffffffu);
    double cum = above;
    size_t keep = 0;
    while (keep < cand_.size() && cum < target) cum += w_[static_cast<size_t>(cand_[keep++])];
    lo = keep > 0 ? w_[static_cast<size_t>(cand_[keep - 1])] : BucketFloor(cross);
    drop = keep;
  }
  if (params_.min_p > 0) lo = std::max(lo, static_cast<float>(params_.min_p));  // relative to the top weight, 1
  block_sums_.resize(static_cast<size_t>((V + kDrawBlock - 1) / kDrawBlock));
  double total = cpu::ZeroBelow(w_.data(), V, lo, kDrawBlock, block_sums_.data());
  // Members past the cut that tie with its weight survive the threshold.
  for (size_t j = drop; j < cand_.size() && params_.top_p < 1; ++j) {
    float& w = w_[static_cast<size_t>(cand_[j])];
    if (w > 0) {
      block_sums_[static_cast<size_t>(cand_[j] / kDrawBlock)] -= w;
      total -= w;
      w = 0;
    }
  }
  return DrawAll(z, total);
}

int32_t Sampler::DrawAll(const std::vector<float>& z, double total) {
  double u = Uniform() * total;
  int64_t last = -1;
  for (size_t b = 0; b < block_sums_.size(); ++b) {
    if (block_sums_[b] <= 0) continue;
    const int64_t begin = static_cast<int64_t>(b) * kDrawBlock, end = std::min(vocab_, begin + kDrawBlock);
    if (u >= block_sums_[b] && b + 1 < block_sums_.size()) {
      u -= block_sums_[b];
      for (int64_t i = end - 1; i >= begin; --i) {
        if (w_[static_cast<size_t>(i)] > 0) {
          last = i;
          break;
        }
      }
      continue;
    }
    for (int64_t i = begin; i < end; ++i) {
      const float w = w_[static_cast<size_t>(i)];
      if (w <= 0) continue;
      last = i;
      u -= w;
      if (u < 0) return static_cast<int32_t>(i);
    }
    // Rounding between the block's sum and its scan: the next kept token.
  }
  if (last >= 0) return static_cast<int32_t>(last);
  return static_cast<int32_t>(std::max_element(z.begin(), z.end()) - z.begin());
}

int32_t Sampler::DrawTopK(const std::vector<float>& z, float m, float inv_t) {
  Better better{z.data()};
  const auto k = static_cast<size_t>(params_.top_k);
  if (k <= 4096) {
    cpu::TopIndices(z.data(), vocab_, k, &cand_);
  } else {
    cand_.resize(static_cast<size_t>(vocab_));
    std::iota(cand_.begin(), cand_.end(), 0);
    std::nth_element(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(k), cand_.end(), better);
    cand_.resize(k);
    std::sort(cand_.begin(), cand_.end(), better);
  }
  w_.resize(k);
  double total = 0;
  for (size_t j = 0; j < k; ++j) {
    const float d = z[static_cast<size_t>(cand_[j])] - m;
    w_[j] = d == 0 ? 1.0f : std::exp(d * inv_t);
    total += w_[j];
  }
  size_t n = k;
  if (params_.top_p < 1) {
    const double target = params_.top_p * total;
    double cum = 0;
    size_t keep = 0;
    while (keep < n && cum < target) cum += w_[keep++];
    n = keep;
    total = cum;
  }
  if (params_.min_p > 0) {
    total = 0;
    for (size_t j = 0; j < n; ++j) {
      if (w_[j] < params_.min_p) w_[j] = 0;
      total += w_[j];
    }
  }
  double u = Uniform() * total;
  size_t last = 0;
  for (size_t j = 0; j < n; ++j) {
    if (w_[j] <= 0) continue;
    last = j;
    u -= w_[j];
    if (u < 0) return cand_[j];
  }
  return cand_[last];
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

SampledToken Sampler::TakeGreedy(int32_t id) {
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
    if (const int64_t id = cpu::FiniteArgMax(logits, vocab_); id >= 0) return TakeGreedy(static_cast<int32_t>(id));
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
