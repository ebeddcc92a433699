#include "backend/cpu/ops_activation.h"

#include <cmath>

namespace llmhost::cpu {

float ApplyActivation(Activation act, float x) {
  const double v = x;
  switch (act) {
    case Activation::kSilu:
      return static_cast<float>(v / (1.0 + std::exp(-v)));
    case Activation::kGeluTanh: {
      constexpr double kSqrt2OverPi = 0.7978845608028654;
      return static_cast<float>(0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v))));
    }
  }
  return x;
}

void GatedActivation(Activation act, const float* gate, int64_t gate_stride, const float* up,
                     int64_t up_stride, int64_t rows, int64_t cols, float* out,
                     int64_t out_stride, bool fast, ThreadPool* pool) {
  const GatedRowsFn simd = fast ? GatedRowsAvx2() : nullptr;
  auto body = [&](int64_t r0, int64_t r1) {
    if (simd) {
      simd(act, gate, gate_stride, up, up_stride, r0, r1, cols, out, out_stride);
      return;
    }
    for (int64_t r = r0; r < r1; ++r) {
      const float* g = gate + r * gate_stride;
      const float* u = up + r * up_stride;
      float* o = out + r * out_stride;
      for (int64_t c = 0; c < cols; ++c) o[c] = ApplyActivation(act, g[c]) * u[c];
    }
  };
  if (pool && rows * cols >= 16384) {
    pool->ParallelFor(rows, 1, body);
  } else {
    body(0, rows);
  }
}

void Softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(cap * std::tanh(static_cast<double>(x[i]) / cap));
  }
}

}  // namespace llmhost::cpu
