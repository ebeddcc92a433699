#include "backend/cpu/ops_rope.h"

#include <cmath>
#include <vector>

namespace llmhost::cpu {

void Rope(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
          const RopeParams& p, ThreadPool* pool) {
  const int64_t half = p.rot_dim / 2;
  auto body = [&](int64_t t0, int64_t t1) {
    std::vector<float> cs(static_cast<size_t>(2 * half));  // cos[half], sin[half]
    for (int64_t t = t0; t < t1; ++t) {
      const float pos = static_cast<float>(positions[t]);
      for (int64_t i = 0; i < half; ++i) {
        const float angle = inv_freq[i] * pos;  // f32 product, as transformers
        cs[i] = static_cast<float>(std::cos(static_cast<double>(angle))) * p.attention_scaling;
        cs[half + i] = static_cast<float>(std::sin(static_cast<double>(angle))) * p.attention_scaling;
      }
      const float* c = cs.data();
      const float* s = cs.data() + half;
      float* row = x + t * p.row_stride;
      for (int64_t h = 0; h < p.n_heads; ++h) {
        float* v = row + h * p.head_dim;
        if (p.pairing == RopePairing::kHalfSplit) {
          for (int64_t i = 0; i < half; ++i) {
            const float a = v[i], b = v[i + half];
            v[i] = a * c[i] - b * s[i];
            v[i + half] = b * c[i] + a * s[i];
          }
        } else {
          for (int64_t i = 0; i < half; ++i) {
            const float a = v[2 * i], b = v[2 * i + 1];
            v[2 * i] = a * c[i] - b * s[i];
            v[2 * i + 1] = a * s[i] + b * c[i];
          }
        }
      }
    }
  };
  if (pool && n_tokens > 1) {
    pool->ParallelFor(n_tokens, 4, body);
  } else {
    body(0, n_tokens);
  }
}

}  // namespace llmhost::cpu
