#include "backend/cpu/vec_math.h"

#include <algorithm>
#include <vector>
#include <cmath>
#include <limits>

#include "backend/cpu/cpu_features.h"

namespace llmhost::cpu {

namespace {
bool UseAvx2() {
#if defined(__x86_64__)
  return ActiveCpuIsa() >= CpuIsa::kAvx2;
#else
  return false;
#endif
}
}  // namespace

void SanitizeLogits(const float* in, float* out, int64_t n) {
  if (UseAvx2()) return internal::SanitizeLogitsAvx2(in, out, n);
  for (int64_t i = 0; i < n; ++i) {
    const float v = in[i];
    out[i] = std::isnan(v) ? -std::numeric_limits<float>::infinity()
             : v == std::numeric_limits<float>::infinity() ? std::numeric_limits<float>::max()
                                                           : v;
  }
}

int64_t ArgMax(const float* x, int64_t n) {
  const float m = MaxValue(x, n);
  if (UseAvx2()) return internal::ArgMaxAvx2(x, n, m);
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] == m) return i;
  }
  return 0;
}

int64_t FiniteArgMax(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  if (UseAvx2()) {
    m = internal::MaxIgnoringNanAvx2(x, n);
  } else {
    for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;  // NaN compares false
  }
  if (!std::isfinite(m)) return -1;
  if (UseAvx2()) return internal::ArgMaxAvx2(x, n, m);
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] == m) return i;
  }
  return -1;
}

namespace internal {
void TopHeap::Offer(int32_t i) {
  auto worse = [this](int32_t a, int32_t b) { return Better(a, b); };  // max-heap of the worst
  if (heap->size() < k) {
    heap->push_back(i);
    std::push_heap(heap->begin(), heap->end(), worse);
  } else if (Better(i, heap->front())) {
    std::pop_heap(heap->begin(), heap->end(), worse);
    heap->back() = i;
    std::push_heap(heap->begin(), heap->end(), worse);
  }
}
}  // namespace internal

void TopIndices(const float* x, int64_t n, size_t k, std::vector<int32_t>* out) {
  out->clear();
  if (k == 0 || n <= 0) return;
  k = std::min(k, static_cast<size_t>(n));
  out->reserve(k + 1);
  internal::TopHeap h{x, k, out};
  // The first k fill the heap; later ones enter only if better than its worst.
  for (int32_t i = 0; i < static_cast<int32_t>(k); ++i) h.Offer(i);
  if (UseAvx2()) {
    internal::TopIndicesAvx2(h, n);
  } else {
    for (int64_t i = static_cast<int64_t>(k); i < n; ++i) {
      if (x[i] > h.worst()) h.Offer(static_cast<int32_t>(i));  // an equal later index is never better
    }
  }
  std::sort(out->begin(), out->end(), [&h](int32_t a, int32_t b) { return h.Better(a, b); });
}

void CollectBand(const float* w, int64_t n, float lo, float hi, std::vector<int32_t>* out) {
  if (UseAvx2()) return internal::CollectBandAvx2(w, n, lo, hi, out);
  for (int64_t i = 0; i < n; ++i) {
    if (w[i] >= lo && w[i] < hi) out->push_back(static_cast<int32_t>(i));
  }
}

double ZeroBelow(float* w, int64_t n, float lo, int64_t block, double* block_sums) {
  if (UseAvx2()) return internal::ZeroBelowAvx2(w, n, lo, block, block_sums);
  double total = 0;
  for (int64_t b = 0; b * block < n; ++b) {
    double s = 0;
    for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i) {
      if (w[i] < lo) w[i] = 0;
      s += w[i];
    }
    block_sums[b] = s;
    total += s;
  }
  return total;
}

float MaxValue(const float* x, int64_t n) {
  if (UseAvx2()) return internal::MaxValueAvx2(x, n);
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

double ExpShifted(const float* x, int64_t n, float shift, float scale, float* out) {
  if (UseAvx2()) return internal::ExpShiftedAvx2(x, n, shift, scale, out);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - shift;
    const float w = d == 0 ? 1.0f : std::exp(d * scale);
    out[i] = w;
    sum += w;
  }
  return sum;
}

}  // namespace llmhost::cpu
