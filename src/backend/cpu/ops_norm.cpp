#include "backend/cpu/ops_norm.h"

#include <cmath>

namespace llmhost::cpu {

void RmsNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
             float eps, bool add_one, float* out, ThreadPool* pool) {
  auto body = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * stride;
      float* yr = out + r * stride;
      double ss = 0;
      for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      // As transformers: variance in f32, then rsqrt(variance + eps) in f32.
      const float var = static_cast<float>(ss / static_cast<double>(dim));
      const float inv = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var + eps)));
      if (add_one) {
        for (int64_t i = 0; i < dim; ++i) yr[i] = (xr[i] * inv) * (1.0f + weight[i]);
      } else {
        for (int64_t i = 0; i < dim; ++i) yr[i] = (xr[i] * inv) * weight[i];
      }
    }
  };
  if (pool && rows * dim >= 16384) {
    pool->ParallelFor(rows, 8, body);
  } else {
    body(0, rows);
  }
}

}  // namespace llmhost::cpu
