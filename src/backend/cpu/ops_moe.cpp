#include "backend/cpu/ops_moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace llmhost::cpu {

void TopKRouting(const float* logits, int64_t rows, int64_t n_experts, int64_t k,
                 bool renormalize, int32_t* ids, float* weights) {
  std::vector<float> prob(static_cast<size_t>(n_experts));
  std::vector<int32_t> order(static_cast<size_t>(n_experts));
  for (int64_t r = 0; r < rows; ++r) {
    const float* l = logits + r * n_experts;
    const float mx = *std::max_element(l, l + n_experts);
    double sum = 0;
    for (int64_t e = 0; e < n_experts; ++e) {
      prob[e] = std::exp(l[e] - mx);
      sum += prob[e];
    }
    for (int64_t e = 0; e < n_experts; ++e) prob[e] = static_cast<float>(prob[e] / sum);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
      return prob[a] > prob[b] || (prob[a] == prob[b] && a < b);
    });
    float top_sum = 0;
    for (int64_t j = 0; j < k; ++j) top_sum += prob[order[j]];
    for (int64_t j = 0; j < k; ++j) {
      ids[r * k + j] = order[j];
      weights[r * k + j] = renormalize ? prob[order[j]] / top_sum : prob[order[j]];
    }
  }
}

}  // namespace llmhost::cpu
