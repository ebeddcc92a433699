// Mixture-of-experts on the device: top-k routing, and the per-slot tables
// and sums of the expert FFN (backend.h's MoeFfn), so that routing never
// goes through the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmhost::cuda {

// Softmax over each row's logits, the k largest (ties: lower id first) in
// descending order, renormalized when asked (the CPU's arithmetic).
void LaunchTopKRouting(const float* logits, int64_t rows, int64_t n_experts, int64_t k, bool renormalize,
                       int32_t* ids, float* weights, cudaStream_t s);

// Per token, its k (expert, weight) pairs reordered by expert id (ids outside
// [0, n_experts) become -1 and go last): slot j of every token is then its
// j-th expert in id order, the CPU's order of summation.
void LaunchSortSlots(const int32_t* ids, const float* weights, int64_t n, int64_t k, int64_t n_experts,
                     int32_t* slot_expert, float* slot_weight, cudaStream_t s);

// out[t, :] += slot_weight[t * k + j] * y[t, :] for tokens whose slot j has
// an expert.
void LaunchSlotAccumulate(const float* y, int64_t n, int64_t cols, const int32_t* slot_expert,
                          const float* slot_weight, int64_t k, int64_t j, float* out, cudaStream_t s);

}  // namespace llmhost::cuda
