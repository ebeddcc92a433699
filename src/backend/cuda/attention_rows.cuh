// Which sequence, positions and keys an attention q row has (device code
// shared by the attention kernels).
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/common.cuh"

namespace llmhost::cuda {

// The q row's sequence. A decode step's row r is sequence r's one new row,
// so that sequence is tried first; else a binary search by first row (the
// forward pass numbers rows in sequence order: a step that mixes prompt
// chunks with decode rows), and a scan where neither finds it (any order).
// The scan alone cost every block of a 128-sequence step up to 128 dependent
// loads, the merge's and the chunk kernel's alike. Sequences' rows never
// overlap, so each way finds the one sequence that holds the row.
__device__ __forceinline__ bool SeqHolds(const AttentionSeq* seqs, int64_t s, int64_t row) {
  const int64_t q_row = seqs[s].q_row;
  return row >= q_row && row < q_row + seqs[s].n_new;
}
__device__ __forceinline__ bool FindSeq(const AttentionSeq* seqs, int64_t n_seqs, int64_t row, AttentionSeq* out) {
  if (row < n_seqs && SeqHolds(seqs, row, row)) {
    *out = seqs[row];
    return true;
  }
  int64_t lo = 0, hi = n_seqs;  // the last sequence whose first row is at most `row`, if sorted
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (seqs[mid].q_row <= row) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  if (n_seqs > 0 && SeqHolds(seqs, lo, row)) {
    *out = seqs[lo];
    return true;
  }
  int64_t s = 0;
  while (s + 1 < n_seqs && !SeqHolds(seqs, s, row)) ++s;
  *out = seqs[s];
  return SeqHolds(seqs, s, row);
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

// The keys of chunk `chunk` (kChunk absolute positions) that q row `row`
// sees, as local indices [k_lo, k_hi] of the chunk; false when it sees none
// (or, with generated_only, when the row is a prompt row: the tensor cores'
// rows, prompt_attention). `seq` receives the row's sequence.
template <int kChunk>
__device__ __forceinline__ bool ChunkKeys(const AttentionSeq* seqs, int64_t n_seqs, int64_t row, int64_t window,
                                          int64_t chunk, bool generated_only, AttentionSeq* seq, int64_t* k_lo,
                                          int64_t* k_hi) {
  if (!FindSeq(seqs, n_seqs, row, seq)) return false;
  int64_t lo, pos;
  KeyRange(*seq, row, window, &lo, &pos);
  if (generated_only && pos < seq->generated_from) return false;
  const int64_t first = chunk * kChunk;
  if (first > pos || first + kChunk <= lo) return false;
  *k_lo = lo > first ? lo - first : 0;
  *k_hi = pos - first < kChunk ? pos - first : kChunk - 1;
  return true;
}

// Whether the keys of `seq`'s row `row` lie in one chunk: the chunk kernel
// then writes the row's output itself (the merge's arithmetic for one chunk,
// the same bits) and the merge leaves the row alone.
template <int kChunk>
__device__ __forceinline__ bool OneChunk(const AttentionSeq& seq, int64_t row, int64_t window) {
  int64_t lo, pos;
  KeyRange(seq, row, window, &lo, &pos);
  return lo / kChunk == pos / kChunk;
}

// For each query head g of a chunk block (warp w takes heads w, w + n_warps,
// ...): the max of its scores sc[g * kChunk + k], k in [k_lo, k_hi], then
// exp(score - max) in place and their sum (lane-strided, then the
// butterfly): a fixed order. (max, sum) go to out[g * head_stride + 0, 1].
template <int kChunk>
__device__ __forceinline__ void ChunkSoftmax(float* sc, int group, int64_t k_lo, int64_t k_hi, float* out,
                                             int64_t head_stride, int n_warps) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int g = warp; g < group; g += n_warps) {
    float* s = sc + g * kChunk;
    float mx = -INFINITY;
    for (int64_t k = k_lo + lane; k <= k_hi; k += 32) mx = fmaxf(mx, s[k]);
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, o));
    float l = 0.0f;
    for (int64_t k = k_lo + lane; k <= k_hi; k += 32) {
      const float e = expf(s[k] - mx);
      s[k] = e;
      l += e;
    }
    l = WarpSum(l);
    if (lane == 0) {
      out[g * head_stride] = mx;
      out[g * head_stride + 1] = l;
    }
  }
}

}  // namespace llmhost::cuda
