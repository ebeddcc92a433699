// Embedding lookup on the CPU: rows of a stored weight matrix, dequantized.
#pragma once

#include <cstdint>

#include "backend/weight_matrix.h"
#include "util/thread_pool.h"

namespace llmhost::cpu {

// out[i, :] = w[ids[i], :] * scale (w.cols values per row). Ids must be in
// [0, w.rows) (the model checks them before any op runs).
void Embedding(const WeightMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
               ThreadPool* pool);

}  // namespace llmhost::cpu
