// Gated activations and logit soft-capping on the CPU (f32).
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "util/thread_pool.h"

namespace llmhost::cpu {

// act(x): SiLU x·σ(x), or GELU with the tanh approximation (transformers'
// gelu_pytorch_tanh): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
float ApplyActivation(Activation act, float x);

// out[r, c] = act(gate[r, c]) * up[r, c]; rows at the given strides. `fast`:
// AVX2 with a vector exp where the CPU has it (relative error ~1e-6);
// otherwise the reference loops (activation in double, rounded to f32).
void GatedActivation(Activation act, const float* gate, int64_t gate_stride, const float* up,
                     int64_t up_stride, int64_t rows, int64_t cols, float* out,
                     int64_t out_stride, bool fast, ThreadPool* pool);

// Rows [r0, r1) of GatedActivation; the AVX2 variant, or nullptr.
using GatedRowsFn = void (*)(Activation act, const float* gate, int64_t gate_stride,
                             const float* up, int64_t up_stride, int64_t r0, int64_t r1,
                             int64_t cols, float* out, int64_t out_stride);
GatedRowsFn GatedRowsAvx2();

// x[i] = 0.5·x·(1 + erf(x/√2)) for i in [i0, i1) (BERT's exact GELU): the
// AVX2 variant (absolute error ~1e-7), or nullptr (ops_encoder.h's Gelu is
// the reference).
using GeluRangeFn = void (*)(float* x, int64_t i0, int64_t i1);
GeluRangeFn GeluErfAvx2();

// x[i] = cap · tanh(x[i] / cap).
void Softcap(float* x, int64_t n, float cap);

}  // namespace llmhost::cpu
