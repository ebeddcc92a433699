// Which sequence, positions and keys an attention q row has (device code
// shared by the attention kernels).
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace llmhost::cuda {

// The q row's sequence (a short scan: a batch holds at most a few hundred).
__device__ __forceinline__ bool FindSeq(const AttentionSeq* seqs, int64_t n_seqs, int64_t row, AttentionSeq* out) {
  int64_t s = 0;
  while (s + 1 < n_seqs && !(row >= seqs[s].q_row && row < seqs[s].q_row + seqs[s].n_new)) ++s;
  *out = seqs[s];
  return row >= out->q_row && row < out->q_row + out->n_new;
}

// The row's absolute position in its sequence.
__device__ __forceinline__ int64_t RowPosition(const AttentionSeq& seq, int64_t row) {
  return seq.kv_len - seq.n_new + (row - seq.q_row);
}

// The keys row `row` sees: [lo, pos].
__device__ __forceinline__ void KeyRange(const AttentionSeq& seq, int64_t row, int64_t window, int64_t* lo,
                                         int64_t* pos) {
  *pos = RowPosition(seq, row);
  *lo = window > 0 && *pos - window + 1 > 0 ? *pos - window + 1 : 0;
}

}  // namespace llmhost::cuda
