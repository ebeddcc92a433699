// Bidirectional attention of encoders over dense q/k/v rows (no cache, no
// mask): Backend::EncoderAttention, f32 as the CPU reference computes it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cuda {

// The dynamic shared memory one block needs (the scores of the longest
// sequence and one query head); the caller checks it against the device's limit.
size_t EncoderAttentionSmemBytes(const EncoderAttentionParams& p);

void LaunchEncoderAttention(const float* q, const float* k, const float* v, const EncoderSeq* seqs,
                            int64_t n_seqs, const EncoderAttentionParams& p, float* out, cudaStream_t s);

}  // namespace llmhost::cuda
