// Per-instruction-set bodies of the CPU attention (ops_attention.cpp). Every
// variant sums in a fixed order that does not depend on the batch, so results
// are row-independent and reproducible on one machine.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cpu {

// out[row, (kv_head * group + h) * head_dim ...] for h < group, from query
// `row` at position `pos`. scores: scratch of group * (pos + 1) floats.
using AttendGroupFn = void (*)(const float* q, const void* k_cache, const void* v_cache,
                               const AttentionSeq& s, int64_t row, int64_t pos, int64_t kv_head,
                               const AttentionParams& p, float* scores, float* out);

// Portable f32 loops (the reference path).
void AttendGroupScalar(const float* q, const void* k_cache, const void* v_cache,
                       const AttentionSeq& s, int64_t row, int64_t pos, int64_t kv_head,
                       const AttentionParams& p, float* scores, float* out);

// Query rows [row0, row0 + nq) of sequence `s` (positions pos0, pos0 + 1,
// ...) against KV head kv_head, for the query heads of its GQA group.
// Each output is computed by the same operations whatever nq and the rows
// beside it:
//   score(q, j) = fma chain over c = 0 .. head_dim - 1 from +0, then * scale
//     (then the soft cap);
//   softmax over the row's own keys [lo, pos] (Softmax: 8-lane max and sums);
//   out[c] = fma chain over the tile's keys in order from +0, with weight 0
//     for keys outside [lo, pos] (adding +-0 leaves a sum unchanged, so this
//     equals the chain over [lo, pos] alone; K/V are finite).
using AttendTileFn = void (*)(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq& s,
                              int64_t row0, int64_t pos0, int64_t nq, int64_t kv_head, const AttentionParams& p,
                              float* out);

// Query rows per tile in a prefill.
inline constexpr int64_t kQueryTile = 16;

// AVX2 + FMA, or nullptr when the build or the CPU (cpu_features.h) lacks them.
AttendTileFn AttendTileAvx2();

}  // namespace llmhost::cpu
