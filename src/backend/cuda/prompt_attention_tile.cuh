// Device code the two prompt attention kernels share (prompt_attention.cu on
// mma.sync, prompt_attention_wgmma.cu on Hopper's wgmma): a lane's two rows
// and the keys they see, the online softmax over one 64-key tile of scores
// in the m16n8 accumulator layout (which wgmma's m64nN gives each warp as
// well), the probabilities packed as the next MMA's A operand, and the
// output rows. The same arithmetic in both, so that the two give the same
// bits where they both run.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/attention_rows.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/elem.h"

namespace llmhost::cuda::prompt_tile {

constexpr int kKeys = 64;     // keys per tile, at absolute positions
constexpr int kMinRows = 64;  // the fewest rows a block takes: a GQA group divides it
constexpr float kLog2e = 1.4426950408889634f;

template <Elem E>
__device__ __forceinline__ uint16_t To16(float v) {
  if constexpr (E == Elem::kBF16) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  } else {
    return __half_as_ushort(__float2half_rn(v));
  }
}

template <Elem E>
__device__ __forceinline__ float From16(uint16_t h) {
  if constexpr (E == Elem::kBF16) {
    return Bf16ToF32(h);
  } else {
    return F16ToF32(h);
  }
}

// v as a 16-bit term (hi) and, with kSplit, the rest it rounded off (lo).
template <Elem E, bool kSplit>
__device__ __forceinline__ void Split(float v, uint16_t* hi, uint16_t* lo) {
  *hi = To16<E>(v);
  if constexpr (kSplit) *lo = To16<E>(v - From16<E>(*hi));
}

// Two values as one MMA register (the lower column in the low half).
template <Elem E, bool kSplit>
__device__ __forceinline__ void Pack(float a, float b, uint32_t* hi, uint32_t* lo) {
  uint16_t ah, al, bh, bl;
  Split<E, kSplit>(a, &ah, &al);
  Split<E, kSplit>(b, &bh, &bl);
  *hi = ah | (static_cast<uint32_t>(bh) << 16);
  if constexpr (kSplit) *lo = al | (static_cast<uint32_t>(bl) << 16);
}

// A lane's two rows (m and m + 8 of its warp's 16, block row m = 16 warp +
// lane / 4) and the keys they see, in 32 bits (positions and rows of a batch
// fit an int; registers bound the blocks' occupancy). Block row m is head
// m / per_block at position m % per_block of rows [r_begin, +per_block);
// rows outside [a, end) are left out (valid false).
struct LaneRows {
  bool valid[2];
  int pos[2], lo[2], row_of[2], head_of[2];
  int warp_lo, warp_hi;  // the keys some row of the warp sees
  int all_lo, all_hi;    // the keys every row of the warp sees (none where a row is left out)

  __device__ __forceinline__ LaneRows(const AttentionSeq& seq, const AttentionParams& p, int64_t r_begin, int64_t a,
                                      int64_t end, int per_block, int group, int64_t kv_head, int warp, int lane) {
    warp_lo = INT_MAX, warp_hi = -1, all_lo = -1, all_hi = INT_MAX;
    for (int h = 0; h < 2; ++h) {
      const int m = 16 * warp + (lane >> 2) + 8 * h;
      row_of[h] = static_cast<int>(r_begin + m % per_block);
      head_of[h] = static_cast<int>(kv_head * group + m / per_block);
      valid[h] = row_of[h] >= a && row_of[h] < end;
      int64_t l, q_pos;
      KeyRange(seq, valid[h] ? row_of[h] : a, p.window, &l, &q_pos);
      lo[h] = static_cast<int>(l);
      pos[h] = static_cast<int>(q_pos);
      if (valid[h]) {
        warp_lo = min(warp_lo, lo[h]);
        warp_hi = max(warp_hi, pos[h]);
        all_lo = max(all_lo, lo[h]);
        all_hi = min(all_hi, pos[h]);
      } else {
        all_hi = -1;
      }
    }
    warp_lo = __reduce_min_sync(0xFFFFFFFFu, warp_lo);
    warp_hi = __reduce_max_sync(0xFFFFFFFFu, warp_hi);
    all_lo = __reduce_max_sync(0xFFFFFFFFu, all_lo);
    all_hi = __reduce_min_sync(0xFFFFFFFFu, all_hi);
  }
  // No row of the warp sees a key of the tile at key0: it changes none of their bits.
  __device__ __forceinline__ bool Skips(int key0) const { return key0 > warp_hi || key0 + kKeys - 1 < warp_lo; }
  // Every row of the warp sees every key of the tile: no mask (the same values).
  __device__ __forceinline__ bool SeesAll(int key0) const { return key0 >= all_lo && key0 + kKeys - 1 <= all_hi; }
};

// One tile's scores s (q·k, [n8 block j][element]) become probabilities in
// place: scaled to log2 units (soft-capped where p.softcap > 0), masked
// unless `full`, the running max m_run and sum l_run of each row moved on,
// and the output sums o rescaled by the change of the max.
template <int kMaxD>
__device__ __forceinline__ void SoftmaxTile(float (&s)[8][4], float (&o)[kMaxD / 8][4], float (&m_run)[2],
                                            float (&l_run)[2], const LaneRows& rows, int key0, bool full,
                                            const AttentionParams& p, float scale_log2, int lane) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float v;
      if (p.softcap > 0) {
        v = __fmul_rn(s[j][e], p.scale);
        v = __fmul_rn(__fmul_rn(p.softcap, tanhf(__fdiv_rn(v, p.softcap))), kLog2e);
      } else {
        v = __fmul_rn(s[j][e], scale_log2);
      }
      s[j][e] = v;
    }
  }
  if (!full) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e >> 1;
        const int key = key0 + j * 8 + (lane & 3) * 2 + (e & 1);
        if (!rows.valid[h] || key > rows.pos[h] || key < rows.lo[h]) s[j][e] = -INFINITY;
      }
    }
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    mx[0] = fmaxf(mx[0], fmaxf(s[j][0], s[j][1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[j][2], s[j][3]));
  }
  float alpha[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xFFFFFFFFu, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xFFFFFFFFu, mx[h], 2));
    const float m_new = fmaxf(m_run[h], mx[h]);
    alpha[h] = m_new == m_run[h] ? 1.0f : exp2f(m_run[h] - m_new);  // m_run = -inf: 0
    m_run[h] = m_new;
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int h = e >> 1;
      const float pv = s[j][e] == -INFINITY ? 0.0f : exp2f(s[j][e] - m_run[h]);
      s[j][e] = pv;
      sum[h] += pv;
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) l_run[h] = fmaf(l_run[h], alpha[h], sum[h]);
#pragma unroll
  for (int j = 0; j < kMaxD / 8; ++j) {
    o[j][0] *= alpha[0];
    o[j][1] *= alpha[0];
    o[j][2] *= alpha[1];
    o[j][3] *= alpha[1];
  }
}

// Keys [16 kk, +16) of the probabilities as an m16n8k16 (and wgmma m64nNk16)
// A operand: hi, and with kSplit the rounding rest lo.
template <Elem E, bool kSplit>
__device__ __forceinline__ void PackProbabilities(const float (&s)[8][4], int kk, uint32_t (&ph)[4], uint32_t (&pl)[4]) {
  Pack<E, kSplit>(s[2 * kk][0], s[2 * kk][1], &ph[0], &pl[0]);
  Pack<E, kSplit>(s[2 * kk][2], s[2 * kk][3], &ph[1], &pl[1]);
  Pack<E, kSplit>(s[2 * kk + 1][0], s[2 * kk + 1][1], &ph[2], &pl[2]);
  Pack<E, kSplit>(s[2 * kk + 1][2], s[2 * kk + 1][3], &ph[3], &pl[3]);
}

// The rows' sums over their quads, then each valid row's output o / l.
template <int kMaxD>
__device__ __forceinline__ void StoreRows(const float (&o)[kMaxD / 8][4], float (&l_run)[2], const LaneRows& rows,
                                          const AttentionParams& p, int d, int lane, float* out) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l_run[h] += __shfl_xor_sync(0xFFFFFFFFu, l_run[h], 1);
    l_run[h] += __shfl_xor_sync(0xFFFFFFFFu, l_run[h], 2);
  }
#pragma unroll
  for (int j = 0; j < kMaxD / 8; ++j) {
    if (j * 8 >= d) break;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!rows.valid[h]) continue;
      float* y = out + static_cast<int64_t>(rows.row_of[h]) * p.out_stride + static_cast<int64_t>(rows.head_of[h]) * d +
                 j * 8 + (lane & 3) * 2;
      y[0] = __fdiv_rn(o[j][2 * h], l_run[h]);
      y[1] = __fdiv_rn(o[j][2 * h + 1], l_run[h]);
    }
  }
}

// The end of the prompt rows of run [a, b) of `seq` (generated rows are the
// chunk kernel's): a where there are none.
__device__ __forceinline__ int64_t PromptRunEnd(const AttentionSeq& seq, int64_t a, int64_t b) {
  const int64_t first_pos = RowPosition(seq, a);
  if (first_pos >= seq.generated_from) return a;
  const int64_t prompt_rows = seq.generated_from - first_pos;  // generated_from may be INT64_MAX: no a + it
  return prompt_rows < b - a ? a + prompt_rows : b;
}

// Column c of block row m's q (head m / per_block of the KV head's group, at
// row r_begin + m % per_block), 0 for a row outside [a, end).
__device__ __forceinline__ float QAt(const float* q, const AttentionParams& p, int64_t r_begin, int64_t a,
                                     int64_t end, int per_block, int group, int64_t kv_head, int m, int c) {
  const int64_t row = r_begin + m % per_block;
  if (row < a || row >= end) return 0.0f;
  return q[row * p.q_stride + (kv_head * group + m / per_block) * p.head_dim + c];
}

// A block's rows: block x of the grid takes rows [x' per_block, +per_block)
// with x' counted from the end (the last rows first: they see the most
// keys), per_block = rows / the GQA group; attend(seq, r_begin, a, b) for
// each sequence's run [a, b) of them, one sequence at a time.
template <typename Attend>
__device__ __forceinline__ void ForEachRun(const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p,
                                           int rows, Attend&& attend) {
  const int64_t per_block = rows / (p.n_heads / p.n_kv_heads);
  const int64_t r_begin = (static_cast<int64_t>(gridDim.x) - 1 - blockIdx.x) * per_block;
  const int64_t r_end = min(r_begin + per_block, p.n_rows);
  for (int64_t r = r_begin; r < r_end;) {
    AttentionSeq seq;
    if (!FindSeq(seqs, n_seqs, r, &seq)) {
      ++r;
      continue;
    }
    const int64_t run_end = min(r_end, seq.q_row + seq.n_new);
    attend(seq, r_begin, r, run_end);
    r = run_end;
  }
}

// Where key j's K/V row of this KV head starts in the paged cache (elements).
__device__ __forceinline__ int64_t KeyRowAt(const AttentionSeq& seq, const AttentionParams& p, int j, int64_t kv_head) {
  const int block_size = static_cast<int>(p.block_size);
  return (static_cast<int64_t>(seq.block_table[j / block_size]) * block_size + j % block_size) * p.n_kv_heads *
             p.head_dim +
         kv_head * p.head_dim;
}

}  // namespace llmhost::cuda::prompt_tile
