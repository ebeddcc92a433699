// Causal paged attention, split over the keys ("flash-decoding"): each q
// row's keys are cut into chunks of kAttentionChunk absolute positions; one
// block computes a chunk's softmax partials for the query heads of one KV
// head (K/V rows read once for the group, through the sequence's block
// table, in the cache's type), a second kernel merges a row's chunks in
// order. The chunking depends on positions alone, so a row's result never
// depends on its batch. Rows are launched in groups of rows_per_launch, so
// the partials fit `scratch` (AttentionScratchPerRow bytes per row).
// generated_only: rows of the prompt (before their sequence's
// generated_from) are left to prompt_attention.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cuda {

constexpr int64_t kMaxAttentionHeadDim = 512;
constexpr int64_t kAttentionChunk = 128;

int64_t AttentionChunks(int64_t max_kv_len);
size_t AttentionScratchPerRow(const AttentionParams& p);

void LaunchAttention(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                     int64_t n_seqs, const AttentionParams& p, float* out, float* scratch, int64_t rows_per_launch,
                     bool generated_only, cudaStream_t s);

}  // namespace llmhost::cuda
