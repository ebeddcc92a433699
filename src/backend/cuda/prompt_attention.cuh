// Causal paged attention of prompt rows on the tensor cores (flash-attention
// style): a block takes 128 (position, query head) rows of one KV head, keeps
// their q in shared memory as 16-bit terms, and walks the keys in tiles of 64
// absolute positions, each K/V tile copied from the paged cache (in its own
// 16-bit type) while the tile before it is used (64 rows and one tile at a
// time where head_dim is over 128, where the GPU's shared memory per block
// holds no more, or with LLMHOST_CUDA_PROMPT_ATTENTION_WARPS=4), with a running max and
// sum per row (online softmax) and the output summed by m16n8k16 MMAs with f32
// accumulators. q is one 16-bit term (split_q false: the default) or two (hi +
// the rounding rest, ~16 bits: LLMHOST_CUDA_PROMPT_SPLIT=on at auto), and so
// are the probabilities multiplied into V.
//
// Batch invariance: a row's arithmetic depends on its own q, its keys and
// their tiles at absolute positions, never on the other rows of its block
// (an MMA row's sums do not depend on the other rows) or on the batch; a key
// tile that a row does not see changes none of its bits (its probabilities
// are 0, its scale factor exactly 1), so which tiles a block walks does not
// matter either.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/backend.h"

namespace llmhost::cuda {

// On unless LLMHOST_CUDA_PROMPT_ATTENTION=off (read at each call, so a test or
// a user comparing speeds can turn it off without a rebuild).
bool PromptAttentionEnabled();

// Whether this shape's prompt rows can go to the tensor cores: 16-bit K/V,
// head_dim a multiple of 16 up to 256, a GQA group that divides 64, and a
// block's shared memory (q in one term, or two with split_q) within the GPU's.
bool PromptAttentionFits(const AttentionParams& p, bool split_q);

// The same rows on Hopper's wgmma (prompt_attention_wgmma.cu), the same
// bits: bf16 K/V, head_dim 64 or 128, one 16-bit term, an sm_90a device, and
// LLMHOST_CUDA_PROMPT_ATTENTION_WGMMA=on (opt-in until measured). False
// (nothing launched) elsewhere.
bool LaunchPromptAttentionWgmma(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                                int64_t n_seqs, const AttentionParams& p, float* out, cudaStream_t s);

// Writes the output rows of the prompt rows (positions before their
// sequence's generated_from) and no others.
void LaunchPromptAttention(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                           int64_t n_seqs, const AttentionParams& p, bool split_q, float* out, cudaStream_t s);

}  // namespace llmhost::cuda
