// Element-wise ops on the CPU (f32): residual adds, biases, scaling, row
// gathers and weighted scatter-adds (MoE dispatch).
#pragma once

#include <cstdint>

namespace llmhost::cpu {

// out[i] = a[i] + b[i] (out may alias a or b).
void Add(const float* a, const float* b, int64_t n, float* out);
// x[r, c] += bias[c], rows of `cols` values `stride` apart.
void AddBias(float* x, int64_t rows, int64_t cols, int64_t stride, const float* bias);
// x[i] *= s.
void Scale(float* x, int64_t n, float s);
// dst[i, :] = src[rows[i], :] (cols values per row, dense).
void GatherRows(const float* src, int64_t cols, const int32_t* rows, int64_t n, float* dst);
// dst[rows[i], :] += scales[i] * src[i, :], i = 0, 1, ... in order.
void ScatterAddRows(const float* src, int64_t cols, const int32_t* rows, const float* scales,
                    int64_t n, float* dst);

}  // namespace llmhost::cpu
