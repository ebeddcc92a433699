#include "backend/cpu/ops_activation.h"

#include <algorithm>
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
  // Work in pieces of one row x up to kCols columns, so that a single decode
  // row still spreads over the pool.
  constexpr int64_t kCols = 2048;
  const int64_t pieces_per_row = (cols + kCols - 1) / kCols;
  auto body = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t r = i / pieces_per_row, c0 = i % pieces_per_row * kCols;
      const int64_t n = std::min(kCols, cols - c0);
      const float* g = gate + r * gate_stride + c0;
      const float* u = up + r * up_stride + c0;
      float* o = out + r * out_stride + c0;
      if (simd) {
        simd(act, g, 0, u, 0, 0, 1, n, o, 0);
      } else {
        for (int64_t c = 0; c < n; ++c) o[c] = ApplyActivation(act, g[c]) * u[c];
      }
    }
  };
  const int64_t n_pieces = rows * pieces_per_row;
  if (pool && rows * cols >= 16384) {
    pool->ParallelFor(n_pieces, 1, body);
  } else {
    body(0, n_pieces);
  }
}

void Softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(cap * std::tanh(static_cast<double>(x[i]) / cap));
  }
}

}  // namespace llmhost::cpu
