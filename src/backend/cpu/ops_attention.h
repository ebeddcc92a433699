// Causal attention on the CPU (f32 arithmetic) over a paged KV cache of f32,
// bf16 or f16 rows, and the write of new K/V rows into it.
//
// Cache layout (per layer): k_cache, v_cache [n_blocks * block_size, kv_dim]
// with kv_dim = n_kv_heads * head_dim; the K of position j of a sequence is
// row block_table[j / block_size] * block_size + j % block_size. 16-bit rows
// are widened to f32 exactly before use, so attention over a 16-bit cache is
// bit for bit attention over the f32 cache holding the rounded values.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "util/thread_pool.h"

namespace llmhost::cpu {

// k_cache[slots[i], :] = k[i, :kv_dim] (rounded to kv_dtype), v_cache likewise, i < n.
void StoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n,
             int64_t kv_dim, const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype,
             ThreadPool* pool);

// For each sequence and each of its new tokens (position p) and head h:
//   s_j = scale * q·k_j for keys j in [lo, p] (lo = p - window + 1 when
//   window > 0, else 0), optionally soft-capped; softmax over j in f32 with
//   the maximum subtracted; out = Σ softmax_j v_j. Query head h reads KV head
//   h / (n_heads / n_kv_heads). Each output depends only on its own
//   sequence's cache and query (rows are independent of the batch).
// `fast`: AVX2/FMA inner loops (with a polynomial exp) where the CPU has
// them; otherwise, and for the reference path, portable f32 loops.
void Attention(const float* q, const void* k_cache, const void* v_cache,
               const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p, float* out,
               bool fast, ThreadPool* pool);

}  // namespace llmhost::cpu
