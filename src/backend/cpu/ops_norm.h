// RMSNorm on the CPU (f32).
#pragma once

#include <cstdint>

#include "util/thread_pool.h"

namespace llmhost::cpu {

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * (add_one ? 1 + w : w)
// for `rows` rows of `dim` values, `stride` elements apart (x and out alike).
// Per-head q/k norms are the same call with rows = tokens * heads,
// dim = head_dim. The mean of squares is accumulated in double, so a row's
// result does not depend on how rows are split across threads. `pool` may
// be null. In place (out == x) is allowed.
void RmsNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
             float eps, bool add_one, float* out, ThreadPool* pool);

}  // namespace llmhost::cpu
