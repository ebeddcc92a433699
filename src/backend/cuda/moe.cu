#include "backend/cuda/common.cuh"
#include "backend/cuda/moe.cuh"

namespace llmhost::cuda {
namespace {

// One thread per row; probabilities recomputed where needed instead of held
// (any number of experts, no local arrays).
__global__ void TopKKernel(const float* logits, int64_t rows, int64_t n_experts, int64_t k, bool renormalize,
                           int32_t* ids, float* weights) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* l = logits + r * n_experts;
  float mx = l[0];
  for (int64_t e = 1; e < n_experts; ++e) mx = fmaxf(mx, l[e]);
  double sum = 0;
  for (int64_t e = 0; e < n_experts; ++e) sum += expf(l[e] - mx);
  auto prob = [&](int64_t e) { return static_cast<float>(expf(l[e] - mx) / sum); };
  // Selection k times: the largest below the previous pick in (prob desc, id asc) order.
  float prev_p = INFINITY;
  int64_t prev_id = -1;
  float top_sum = 0;
  for (int64_t j = 0; j < k; ++j) {
    float best_p = -1;
    int64_t best = -1;
    for (int64_t e = 0; e < n_experts; ++e) {
      const float pe = prob(e);
      const bool after_prev = pe < prev_p || (pe == prev_p && e > prev_id);
      if (after_prev && (pe > best_p || best < 0)) {
        best_p = pe;
        best = e;
      }
    }
    ids[r * k + j] = static_cast<int32_t>(best);
    weights[r * k + j] = best_p;
    top_sum += best_p;
    prev_p = best_p;
    prev_id = best;
  }
  if (renormalize) {
    for (int64_t j = 0; j < k; ++j) weights[r * k + j] = weights[r * k + j] / top_sum;
  }
}

__global__ void SortSlotsKernel(const int32_t* ids, const float* weights, int64_t n, int64_t k, int64_t n_experts,
                                int32_t* slot_expert, float* slot_weight) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= n) return;
  // Insertion sort of k <= a few dozen entries, stable; invalid ids last.
  int32_t* se = slot_expert + t * k;
  float* sw = slot_weight + t * k;
  for (int64_t j = 0; j < k; ++j) {
    int32_t e = ids[t * k + j];
    if (e < 0 || e >= n_experts) e = -1;
    const float w = weights[t * k + j];
    int64_t at = j;
    auto key = [](int32_t id) { return id < 0 ? INT32_MAX : id; };
    while (at > 0 && key(se[at - 1]) > key(e)) {
      se[at] = se[at - 1];
      sw[at] = sw[at - 1];
      --at;
    }
    se[at] = e;
    sw[at] = w;
  }
}

__global__ void SlotAccumulateKernel(const float* y, int64_t cols, const int32_t* slot_expert,
                                     const float* slot_weight, int64_t k, int64_t j, float* out) {
  const int64_t t = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= cols || slot_expert[t * k + j] < 0) return;
  out[t * cols + c] += slot_weight[t * k + j] * y[t * cols + c];
}

}  // namespace

void LaunchTopKRouting(const float* logits, int64_t rows, int64_t n_experts, int64_t k, bool renormalize,
                       int32_t* ids, float* weights, cudaStream_t s) {
  if (rows <= 0 || k <= 0) return;
  TopKKernel<<<Blocks(rows, 64), 64, 0, s>>>(logits, rows, n_experts, k, renormalize, ids, weights);
}

void LaunchSortSlots(const int32_t* ids, const float* weights, int64_t n, int64_t k, int64_t n_experts,
                     int32_t* slot_expert, float* slot_weight, cudaStream_t s) {
  if (n <= 0 || k <= 0) return;
  SortSlotsKernel<<<Blocks(n, 64), 64, 0, s>>>(ids, weights, n, k, n_experts, slot_expert, slot_weight);
}

void LaunchSlotAccumulate(const float* y, int64_t n, int64_t cols, const int32_t* slot_expert,
                          const float* slot_weight, int64_t k, int64_t j, float* out, cudaStream_t s) {
  if (n <= 0 || cols <= 0) return;
  SlotAccumulateKernel<<<dim3(static_cast<unsigned>(n), Blocks(cols, 256)), 256, 0, s>>>(y, cols, slot_expert,
                                                                                          slot_weight, k, j, out);
}

}  // namespace llmhost::cuda
