// Vector passes over a row of floats for the sampler: cleaning a logits row,
// the maximum and its first index, the shifted, scaled exponentials with
// their sum (softmax weights without the division), and the threshold and
// band passes of top_p / min_p. AVX2 where the CPU has it
// (vec_math_avx2.cpp), scalar loops otherwise; exponentials agree to ~3e-7
// relative per element, everything else exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llmhost::cpu {

// out[i] = in[i], with NaN as -inf and +inf as the largest finite float (a
// broken row must not break orderings).
void SanitizeLogits(const float* in, float* out, int64_t n);

// max(x[0..n)), n >= 1; -inf when every element is -inf. NaN must not occur.
float MaxValue(const float* x, int64_t n);
// The lowest index holding MaxValue(x, n).
int64_t ArgMax(const float* x, int64_t n);
// On a raw logits row (NaN allowed): the lowest index of its largest element
// when that is finite, which is then ArgMax of the SanitizeLogits row, without
// writing one; -1 when the largest is +inf or every element is -inf or NaN.
int64_t FiniteArgMax(const float* x, int64_t n);

// out[i] = exp((x[i] - shift) * scale), returning the sum (accumulated in
// double). An element equal to `shift` weighs exactly 1 (also when scale is
// +inf: a temperature near 0); one whose exponent underflows (x = -inf
// included) weighs exactly 0.
double ExpShifted(const float* x, int64_t n, float shift, float scale, float* out);

// The k largest of x (k <= n), largest first, the lower index first among
// equals. A heap of k that most elements fail to enter at one comparison
// (AVX2: eight at a time).
void TopIndices(const float* x, int64_t n, size_t k, std::vector<int32_t>* out);

// For weights w >= 0: appends to `out` every i with lo <= w[i] < hi.
void CollectBand(const float* w, int64_t n, float lo, float hi, std::vector<int32_t>* out);

// w[i] = 0 where w[i] < lo; block_sums[b] = the sum of w over [b * block,
// (b + 1) * block) after that (n / block rounded up entries; block a multiple
// of 8). Returns the total.
double ZeroBelow(float* w, int64_t n, float lo, int64_t block, double* block_sums);

namespace internal {
// The heap of TopIndices: Offer(i) for a candidate that may enter.
struct TopHeap {
  const float* x;
  size_t k;
  std::vector<int32_t>* heap;
  bool Better(int32_t a, int32_t b) const { return x[a] > x[b] || (x[a] == x[b] && a < b); }
  void Offer(int32_t i);
  float worst() const { return x[heap->front()]; }
};
void TopIndicesAvx2(TopHeap& h, int64_t n);
void SanitizeLogitsAvx2(const float* in, float* out, int64_t n);
int64_t ArgMaxAvx2(const float* x, int64_t n, float max);
void CollectBandAvx2(const float* w, int64_t n, float lo, float hi, std::vector<int32_t>* out);
double ZeroBelowAvx2(float* w, int64_t n, float lo, int64_t block, double* block_sums);
float MaxValueAvx2(const float* x, int64_t n);
float MaxIgnoringNanAvx2(const float* x, int64_t n);
double ExpShiftedAvx2(const float* x, int64_t n, float shift, float scale, float* out);
}  // namespace internal

}  // namespace llmhost::cpu
