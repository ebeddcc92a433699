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

// The fast path splits every row's keys at fixed absolute positions into
// segments of kKeySegment keys, so that one long row (a decode at a long
// context) runs on several threads, and combines them exactly the same way
// whichever thread computed which segment, whatever nq and the rows beside
// it:
//   score(q, j) = fma chain over c = 0 .. head_dim - 1 from +0, then * scale
//     (then the soft cap);
//   per segment, over the row's own keys in it: m = max score, e_j =
//     exp(score_j - m), l = Σ e_j (8 lanes, then the tail), o[c] = fma chain
//     over the segment's keys in order from +0, with weight 0 for keys
//     outside the row's range (adding +-0 leaves a sum unchanged, so this
//     equals the chain over the row's keys alone; K/V are finite);
//   combined: M = max m, w_s = exp(m_s - M), out[c] = (Σ_s w_s o_s[c]) *
//     (1 / Σ_s w_s l_s), sums in segment order.
inline constexpr int64_t kKeySegment = 1024;

// A segment's result for R = nq * group score rows: per row, o (head_dim
// floats), then m and l.
inline int64_t PartialStride(int64_t head_dim) { return head_dim + 2; }

// Query rows [row0, row0 + nq) of sequence `s` (positions pos0, pos0 + 1,
// ...) against KV head kv_head, for the query heads of its GQA group, over
// keys [j0, j1) (a segment): writes R partial rows to `part`.
using AttendSegmentFn = void (*)(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq& s,
                                 int64_t row0, int64_t pos0, int64_t nq, int64_t kv_head, const AttentionParams& p,
                                 int64_t j0, int64_t j1, float* part);
// Combines `n_segments` partials (each R rows, one after the other) into
// the output rows of those query rows and heads.
using CombineSegmentsFn = void (*)(const float* parts, int64_t n_segments, int64_t row0, int64_t nq, int64_t kv_head,
                                   const AttentionParams& p, float* out);

struct AttendTileFns {
  AttendSegmentFn segment = nullptr;
  CombineSegmentsFn combine = nullptr;
};

// Query rows per tile in a prefill.
inline constexpr int64_t kQueryTile = 16;

// AVX2 + FMA, or null functions when the build or the CPU (cpu_features.h) lacks them.
AttendTileFns AttendTileAvx2();

}  // namespace llmhost::cpu
