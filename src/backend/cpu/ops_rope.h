// Rotary position embedding on the CPU (f32), in place.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "util/thread_pool.h"

namespace llmhost::cpu {

// Rotates the first p.rot_dim dimensions of every head of x[n_tokens,
// p.row_stride] (heads of p.head_dim values from the start of each row).
// Token t turns by angle positions[t] * inv_freq[i] for frequency i
// (inv_freq: p.rot_dim / 2 values), computed as transformers does: the
// product rounded to f32, then cos/sin times p.attention_scaling.
void Rope(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
          const RopeParams& p, ThreadPool* pool);

}  // namespace llmhost::cpu
