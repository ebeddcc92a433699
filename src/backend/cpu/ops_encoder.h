// The ops encoders (BERT, XLM-RoBERTa) add on the CPU (f32): LayerNorm with
// weight and bias, exact GELU, tanh, and bidirectional attention over dense
// q/k/v rows. Each row's result depends on its own inputs only (the threads'
// split never changes it).
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "util/thread_pool.h"

namespace llmhost::cpu {

// out[r, :] = (x[r, :] - mean) / sqrt(var + eps) * weight + bias; mean and
// (biased) variance accumulated in double. In place allowed. `pool` may be null.
void LayerNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
               const float* bias, float eps, float* out, ThreadPool* pool);

// x[i] = 0.5·x·(1 + erf(x/√2)) (erf in double, rounded to f32; `fast`: the
// AVX2 polynomial of ops_activation.h where the CPU has it).
void Gelu(float* x, int64_t n, bool fast, ThreadPool* pool);
// x[i] = tanh(x[i]) (in double, rounded to f32).
void Tanh(float* x, int64_t n);

// Backend::EncoderAttention: seqs in host memory (the CPU's device memory).
// Scores and the softmax in f32 with the row's maximum subtracted. `fast`:
// the AVX2 tiles (ops_encoder_avx2.cpp) where the CPU has them, else plain
// loops (the reference).
void EncoderAttention(const float* q, const float* k, const float* v, const EncoderSeq* seqs,
                      int64_t n_seqs, const EncoderAttentionParams& p, float* out, bool fast, ThreadPool* pool);

}  // namespace llmhost::cpu
