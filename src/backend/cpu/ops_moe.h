// Mixture-of-experts routing on the CPU (f32).
#pragma once

#include <cstdint>

namespace llmhost::cpu {

// For each of `rows` rows of logits[rows, n_experts]: softmax over all
// experts (f32, maximum subtracted), the k largest probabilities in
// descending order (ties: lower expert id first) into ids/weights[rows, k],
// divided by their sum when `renormalize` (Qwen-MoE norm_topk_prob; Mixtral's
// top-k-then-softmax gives the same weights).
void TopKRouting(const float* logits, int64_t rows, int64_t n_experts, int64_t k,
                 bool renormalize, int32_t* ids, float* weights);

}  // namespace llmhost::cpu
