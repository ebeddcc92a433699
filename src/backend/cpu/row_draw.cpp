#include "backend/cpu/row_draw.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "backend/cpu/vec_math.h"

namespace llmhost::cpu {

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

int32_t RowDraw::Pick(const float* logits, int64_t n, const RowPick& p) {
  if (p.temperature <= 0) {
    if (const int64_t id = FiniteArgMax(logits, n); id >= 0) return static_cast<int32_t>(id);
  }
  z_.resize(static_cast<size_t>(n));
  SanitizeLogits(logits, z_.data(), n);
  return Draw(z_.data(), n, p);
}

int32_t RowDraw::Draw(const float* z, int64_t n, const RowPick& p) {
  p_ = &p;
  n_ = n;
  const int64_t V = n;
  if (p.temperature <= 0) return static_cast<int32_t>(ArgMax(z, V));  // lowest id on ties
  const float m = MaxValue(z, V);
  if (!(m > -std::numeric_limits<float>::infinity())) return 0;  // every token banned: the lowest id
  // Weights exp((z - max) / T): the top candidate weighs exactly 1 (also
  // when 1 / T overflows for a tiny temperature).
  const double inv_t_d = 1.0 / p_->temperature;
  const float inv_t = inv_t_d > std::numeric_limits<float>::max() ? std::numeric_limits<float>::infinity()
                                                                   : static_cast<float>(inv_t_d);
  if (p_->top_k > 0 && p_->top_k < V) return DrawTopK(z, m, inv_t);
  w_.resize(static_cast<size_t>(V));
  const double all = ExpShifted(z, V, m, inv_t, w_.data());
  float lo = 0;      // weights below are dropped
  size_t drop = 0;   // cand_[drop, end): the crossing bucket's members past the top_p cut
  if (p_->top_p < 1) {
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
    const double target = p_->top_p * all;
    double above = 0;
    size_t cross = kBuckets - 1;
    for (;; --cross) {
      double mass = 0;
      for (int k = 0; k < kHistograms; ++k) mass += h[static_cast<size_t>(k) * kBuckets + cross];
      if (above + mass >= target || cross == 0) break;
      above += mass;
    }
    cand_.clear();
    CollectBand(w_.data(), V, BucketFloor(cross),
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
  if (p_->min_p > 0) lo = std::max(lo, static_cast<float>(p_->min_p));  // relative to the top weight, 1
  block_sums_.resize(static_cast<size_t>((V + kDrawBlock - 1) / kDrawBlock));
  double total = ZeroBelow(w_.data(), V, lo, kDrawBlock, block_sums_.data());
  // Members past the cut that tie with its weight survive the threshold.
  for (size_t j = drop; j < cand_.size() && p_->top_p < 1; ++j) {
    float& w = w_[static_cast<size_t>(cand_[j])];
    if (w > 0) {
      block_sums_[static_cast<size_t>(cand_[j] / kDrawBlock)] -= w;
      total -= w;
      w = 0;
    }
  }
  return DrawAll(z, total);
}

int32_t RowDraw::DrawAll(const float* z, double total) {
  double u = p_->u * total;
  int64_t last = -1;
  for (size_t b = 0; b < block_sums_.size(); ++b) {
    if (block_sums_[b] <= 0) continue;
    const int64_t begin = static_cast<int64_t>(b) * kDrawBlock, end = std::min(n_, begin + kDrawBlock);
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
  return static_cast<int32_t>(std::max_element(z, z + n_) - z);
}

int32_t RowDraw::DrawTopK(const float* z, float m, float inv_t) {
  Better better{z};
  const auto k = static_cast<size_t>(p_->top_k);
  if (k <= 4096) {
    TopIndices(z, n_, k, &cand_);
  } else {
    cand_.resize(static_cast<size_t>(n_));
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
  if (p_->top_p < 1) {
    const double target = p_->top_p * total;
    double cum = 0;
    size_t keep = 0;
    while (keep < n && cum < target) cum += w_[keep++];
    n = keep;
    total = cum;
  }
  if (p_->min_p > 0) {
    total = 0;
    for (size_t j = 0; j < n; ++j) {
      if (w_[j] < p_->min_p) w_[j] = 0;
      total += w_[j];
    }
  }
  double u = p_->u * total;
  size_t last = 0;
  for (size_t j = 0; j < n; ++j) {
    if (w_[j] <= 0) continue;
    last = j;
    u -= w_[j];
    if (u < 0) return cand_[j];
  }
  return cand_[last];
}

}  // namespace llmhost::cpu
