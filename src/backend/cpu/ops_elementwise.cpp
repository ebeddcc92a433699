#include "backend/cpu/ops_elementwise.h"

#include <cstring>

namespace llmhost::cpu {

void Add(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void AddBias(float* x, int64_t rows, int64_t cols, int64_t stride, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * stride;
    for (int64_t c = 0; c < cols; ++c) xr[c] += bias[c];
  }
}

void Scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void GatherRows(const float* src, int64_t cols, const int32_t* rows, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * cols, src + static_cast<int64_t>(rows[i]) * cols,
                static_cast<size_t>(cols) * sizeof(float));
  }
}

void ScatterAddRows(const float* src, int64_t cols, const int32_t* rows, const float* scales,
                    int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) {
    float* d = dst + static_cast<int64_t>(rows[i]) * cols;
    const float* s = src + i * cols;
    const float w = scales[i];
    for (int64_t c = 0; c < cols; ++c) d[c] += w * s[c];
  }
}

}  // namespace llmhost::cpu
