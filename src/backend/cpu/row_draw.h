// cpu::RowDraw: the draw from one cleaned logits row that the sampler makes
// after its penalties, bias and mask, and that Backend::PickRows makes where
// the logits are: temperature, top_k, top_p, min_p, then one draw.
//
// Every step is a pass over the row or a selection, never a sort of the
// vocabulary: the weights exp((z - max) / T) in one vector pass; top_k by a
// heap (nth_element past 4096); top_p by bucketing the weights on their float
// exponent (the bit pattern of a positive float orders like its value),
// which finds the bucket where the kept mass crosses top_p, and sorting that
// bucket alone; the draw walks the kept tokens in id order (in likelihood
// order after top_k). bench/sampler_bench.cpp measures it.
//
// Not thread-safe: scratch is reused across calls (one RowDraw a thread).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/row_pick.h"

namespace llmhost::cpu {

class RowDraw {
 public:
  // z: [n] logits without NaN or +inf (SanitizeLogits). Greedy (temperature
  // 0): the lowest id of the largest. Otherwise top_k (0: off; any k), top_p,
  // min_p (relative to the top weight, 1), and the token at p.u of the mass
  // left; every id -inf: 0.
  int32_t Draw(const float* z, int64_t n, const RowPick& p);
  // Draw on a raw logits row (NaN and +inf allowed), cleaned into this
  // RowDraw's scratch first; a greedy row whose largest value is finite is
  // read once, without a copy (cpu::FiniteArgMax).
  int32_t Pick(const float* logits, int64_t n, const RowPick& p);

 private:
  int32_t DrawTopK(const float* z, float max_logit, float inv_t);
  // The draw over the whole row (no top_k): w_ holds every weight (0: not
  // kept), block_sums_ their sums by blocks.
  int32_t DrawAll(const float* z, double total);

  const RowPick* p_ = nullptr;
  int64_t n_ = 0;
  std::vector<float> z_, w_;  // Pick's cleaned row; the weights
  std::vector<int32_t> cand_;
  std::vector<uint64_t> keys_;        // top_p's crossing band as sort keys
  std::vector<double> bucket_mass_, block_sums_;
};

}  // namespace llmhost::cpu
