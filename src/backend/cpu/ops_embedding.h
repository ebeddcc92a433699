// Embedding lookup on the CPU: rows of a stored weight matrix, dequantized.
#pragma once

#include <cstdint>

#include "backend/weight_matrix.h"
#include "util/thread_pool.h"

namespace llmhost::cpu {

// out[i, :] = w[ids[i] - first_id, :] * scale (w.cols values per row); zeros
// for an id outside [first_id, first_id + w.rows) (a vocabulary-parallel slice).
void Embedding(const WeightMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
               ThreadPool* pool, int64_t first_id = 0);

}  // namespace llmhost::cpu
