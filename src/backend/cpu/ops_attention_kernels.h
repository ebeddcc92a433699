// Per-instruction-set bodies of the CPU attention (ops_attention.cpp): one
// query token of one sequence against one KV head, for the query heads of
// its GQA group. Every variant sums in a fixed order that does not depend on
// the batch, so results are row-independent and reproducible on one machine.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cpu {

// out[row, (kv_head * group + h) * head_dim ...] for h < group, from query
// `row` at position `pos`. scores: scratch of group * (pos + 1) floats.
using AttendGroupFn = void (*)(const float* q, const float* k_cache, const float* v_cache,
                               const AttentionSeq& s, int64_t row, int64_t pos, int64_t kv_head,
                               const AttentionParams& p, float* scores, float* out);

// Portable f32 loops (the reference path).
void AttendGroupScalar(const float* q, const float* k_cache, const float* v_cache,
                       const AttentionSeq& s, int64_t row, int64_t pos, int64_t kv_head,
                       const AttentionParams& p, float* scores, float* out);

// AVX2 + FMA, or nullptr when the build or the CPU (cpu_features.h) lacks them.
AttendGroupFn AttendGroupAvx2();

}  // namespace llmhost::cpu
