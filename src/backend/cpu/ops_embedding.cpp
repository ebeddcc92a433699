#include "backend/cpu/ops_embedding.h"

#include <algorithm>

#include "backend/cpu/matmul.h"

namespace llmhost::cpu {

void Embedding(const WeightMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
               ThreadPool* pool, int64_t first_id) {
  auto body = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float* row = out + i * w.cols;
      const int64_t r = ids[i] - first_id;
      if (r < 0 || r >= w.rows) {  // another rank's part of the vocabulary
        std::fill(row, row + w.cols, 0.0f);
        continue;
      }
      DequantizeRows(w, r, r + 1, row);
      if (scale != 1.0f) {
        for (int64_t c = 0; c < w.cols; ++c) row[c] *= scale;
      }
    }
  };
  if (pool && n > 16) {
    pool->ParallelFor(n, 8, body);
  } else {
    body(0, n);
  }
}

}  // namespace llmhost::cpu
