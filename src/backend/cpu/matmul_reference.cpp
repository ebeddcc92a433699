#include "backend/cpu/matmul_reference.h"

#include <vector>

#include "backend/cpu/quant_formats.h"

namespace llmhost::cpu {

void ReferenceMatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool* pool) {
  const int64_t cols = w.cols, rows = w.rows;
  auto body = [&](int64_t r0, int64_t r1) {
    std::vector<float> row(cols);
    for (int64_t r = r0; r < r1; ++r) {
      quant::DequantizeRangeScalar(w, r, 0, cols, row.data());
      int64_t t = 0;
      for (; t + 4 <= n; t += 4) {  // four independent sequential sums
        const float* x0 = x + t * cols;
        float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (int64_t c = 0; c < cols; ++c) {
          a0 += x0[c] * row[c];
          a1 += x0[cols + c] * row[c];
          a2 += x0[2 * cols + c] * row[c];
          a3 += x0[3 * cols + c] * row[c];
        }
        y[t * rows + r] = a0;
        y[(t + 1) * rows + r] = a1;
        y[(t + 2) * rows + r] = a2;
        y[(t + 3) * rows + r] = a3;
      }
      for (; t < n; ++t) {
        const float* xt = x + t * cols;
        float a = 0;
        for (int64_t c = 0; c < cols; ++c) a += xt[c] * row[c];
        y[t * rows + r] = a;
      }
    }
  };
  if (pool) {
    pool->ParallelFor(rows, 16, body);
  } else {
    body(0, rows);
  }
}

}  // namespace llmhost::cpu
