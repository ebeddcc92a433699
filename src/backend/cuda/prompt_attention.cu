#include "backend/cuda/env_switch.h"
#include "backend/cuda/prompt_attention.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <cstring>

#include "backend/cuda/attention_rows.cuh"
#include "backend/cuda/common.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kRows = 64;  // (position, query head) rows a block takes
constexpr int kKeys = 64;  // keys per tile, at absolute positions
constexpr int kWarps = 4;  // a warp takes 16 rows
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;

// Four 8x8 tiles of 16-bit elements, row addresses from lanes 8i..8i+7.
__device__ __forceinline__ void LoadTiles(uint32_t r[4], const uint16_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(p)));
}

// The same, transposed (V's rows are keys; the MMA wants keys as k).
__device__ __forceinline__ void LoadTilesTransposed(uint32_t r[4], const uint16_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(p)));
}

// c += a · b over one m16n8k16 step, f32 sums.
template <Elem E>
__device__ __forceinline__ void Mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  if constexpr (E == Elem::kBF16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

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

// One block's rows [a, b) of one sequence (the other rows of the block are
// left out, and so are generated rows): q into shared memory, then the key
// tiles in order.
template <Elem E, int kMaxD, bool kSplit>
__device__ __forceinline__ void AttendRows(const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
                                           const AttentionParams& p, float scale_log2, const AttentionSeq& seq,
                                           int64_t r_begin, int64_t a, int64_t b, uint16_t* smem, float* out) {
  const int d = static_cast<int>(p.head_dim), stride = d + 8;  // padded: ldmatrix rows in distinct banks
  const int group = static_cast<int>(p.n_heads / p.n_kv_heads);
  const int per_block = kRows / group;  // positions; row m is head m / per_block at position m % per_block
  const int64_t kv_head = blockIdx.y, kv_dim = p.n_kv_heads * d;
  const int64_t first_pos = RowPosition(seq, a);
  if (first_pos >= seq.generated_from) return;  // generated rows: the chunk kernel's
  const int64_t prompt_rows = seq.generated_from - first_pos;  // generated_from may be INT64_MAX: no a + it
  const int64_t end = prompt_rows < b - a ? a + prompt_rows : b;  // past the prompt's rows of [a, b)
  if (end <= a) return;
  uint16_t* q_hi = smem;
  uint16_t* q_lo = q_hi + kRows * stride;
  uint16_t* ks = q_hi + (kSplit ? 2 : 1) * kRows * stride;
  uint16_t* vs = ks + kKeys * stride;
  auto* key_at = reinterpret_cast<int64_t*>(vs + kKeys * stride);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  __syncthreads();  // the previous rows' tiles are read
  for (int i = threadIdx.x; i < kRows * d; i += kThreads) {
    const int m = i / d, c = i % d;
    const int64_t row = r_begin + m % per_block;
    const float v =
        row >= a && row < end ? q[row * p.q_stride + (kv_head * group + m / per_block) * d + c] : 0.0f;
    uint16_t hi, lo;
    Split<E, kSplit>(v, &hi, &lo);
    q_hi[m * stride + c] = hi;
    if constexpr (kSplit) q_lo[m * stride + c] = lo;
  }

  // This lane's two rows (m and m + 8 of its warp's 16) and the keys they see.
  bool valid[2];
  int64_t pos[2], lo[2], row_of[2];
  int head_of[2];
  int warp_lo = INT32_MAX, warp_hi = -1;
  for (int h = 0; h < 2; ++h) {
    const int m = 16 * warp + (lane >> 2) + 8 * h;
    row_of[h] = r_begin + m % per_block;
    head_of[h] = static_cast<int>(kv_head * group + m / per_block);
    valid[h] = row_of[h] >= a && row_of[h] < end;
    KeyRange(seq, valid[h] ? row_of[h] : a, p.window, &lo[h], &pos[h]);
    if (valid[h]) {
      warp_lo = min(warp_lo, static_cast<int>(lo[h]));
      warp_hi = max(warp_hi, static_cast<int>(pos[h]));
    }
  }
  warp_lo = __reduce_min_sync(0xFFFFFFFFu, warp_lo);
  warp_hi = __reduce_max_sync(0xFFFFFFFFu, warp_hi);
  int64_t seg_lo, seg_pos, unused;
  KeyRange(seq, a, p.window, &seg_lo, &unused);
  KeyRange(seq, end - 1, p.window, &unused, &seg_pos);

  float o[kMaxD / 8][4];
#pragma unroll
  for (int j = 0; j < kMaxD / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  const int chunks = d / 8;  // 16-byte pieces of a K/V row

  for (int64_t key0 = seg_lo / kKeys * kKeys; key0 <= seg_pos; key0 += kKeys) {
    __syncthreads();  // the last tile is read (and q is written)
    if (threadIdx.x < kKeys) {
      const int64_t j = key0 + threadIdx.x;
      key_at[threadIdx.x] =
          j < seq.kv_len
              ? (static_cast<int64_t>(seq.block_table[j / p.block_size]) * p.block_size + j % p.block_size) * kv_dim +
                    kv_head * d
              : -1;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < kKeys * chunks; i += kThreads) {
      const int key = i / chunks, c = (i % chunks) * 8;
      const int64_t at = key_at[key];
      CopyAsync16(ks + key * stride + c, k_cache + (at >= 0 ? at + c : 0), at >= 0);
    }
    CopyAsyncCommit();
    for (int i = threadIdx.x; i < kKeys * chunks; i += kThreads) {
      const int key = i / chunks, c = (i % chunks) * 8;
      const int64_t at = key_at[key];
      CopyAsync16(vs + key * stride + c, v_cache + (at >= 0 ? at + c : 0), at >= 0);
    }
    CopyAsyncCommit();
    // A tile none of the warp's rows sees changes none of their bits: skipped.
    const bool skip = key0 > warp_hi || key0 + kKeys - 1 < warp_lo;
    CopyAsyncWait<1>();
    __syncthreads();

    float s[8][4];
#pragma unroll
    for (int j = 0; j < 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    if (!skip) {
#pragma unroll
      for (int kk = 0; kk < kMaxD / 16; ++kk) {
        if (kk * 16 >= d) break;
        uint32_t ah[4], al[4];
        const int at = (16 * warp + (lane & 7) + ((lane >> 3) & 1) * 8) * stride + kk * 16 + (lane >> 4) * 8;
        LoadTiles(ah, q_hi + at);
        if constexpr (kSplit) LoadTiles(al, q_lo + at);
#pragma unroll
        for (int np = 0; np < 4; ++np) {
          uint32_t bk[4];
          LoadTiles(bk, ks + (np * 16 + (lane & 7) + (lane >> 4) * 8) * stride + kk * 16 + ((lane >> 3) & 1) * 8);
          Mma<E>(s[2 * np], ah, bk[0], bk[1]);
          Mma<E>(s[2 * np + 1], ah, bk[2], bk[3]);
          if constexpr (kSplit) {
            Mma<E>(s[2 * np], al, bk[0], bk[1]);
            Mma<E>(s[2 * np + 1], al, bk[2], bk[3]);
          }
        }
      }
      // Scores in log2 units, masked; the running max and sum per row.
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int h = e >> 1;
          const int64_t key = key0 + j * 8 + (lane & 3) * 2 + (e & 1);
          float v;
          if (p.softcap > 0) {
            v = __fmul_rn(s[j][e], p.scale);
            v = __fmul_rn(__fmul_rn(p.softcap, tanhf(__fdiv_rn(v, p.softcap))), kLog2e);
          } else {
            v = __fmul_rn(s[j][e], scale_log2);
          }
          if (!valid[h] || key > pos[h] || key < lo[h]) v = -INFINITY;
          s[j][e] = v;
          mx[h] = fmaxf(mx[h], v);
        }
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
    CopyAsyncWait<0>();
    __syncthreads();
    if (!skip) {
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        uint32_t ph[4], pl[4];
        Pack<E, kSplit>(s[2 * kk][0], s[2 * kk][1], &ph[0], &pl[0]);
        Pack<E, kSplit>(s[2 * kk][2], s[2 * kk][3], &ph[1], &pl[1]);
        Pack<E, kSplit>(s[2 * kk + 1][0], s[2 * kk + 1][1], &ph[2], &pl[2]);
        Pack<E, kSplit>(s[2 * kk + 1][2], s[2 * kk + 1][3], &ph[3], &pl[3]);
#pragma unroll
        for (int dp = 0; dp < kMaxD / 16; ++dp) {
          if (dp * 16 >= d) break;
          uint32_t bv[4];
          LoadTilesTransposed(
              bv, vs + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * stride + dp * 16 + (lane >> 4) * 8);
          Mma<E>(o[2 * dp], ph, bv[0], bv[1]);
          Mma<E>(o[2 * dp + 1], ph, bv[2], bv[3]);
          if constexpr (kSplit) {
            Mma<E>(o[2 * dp], pl, bv[0], bv[1]);
            Mma<E>(o[2 * dp + 1], pl, bv[2], bv[3]);
          }
        }
      }
    }
  }

  // The rows' sums over their quads, then the outputs.
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
      if (!valid[h]) continue;
      float* y = out + row_of[h] * p.out_stride + static_cast<int64_t>(head_of[h]) * d + j * 8 + (lane & 3) * 2;
      y[0] = __fdiv_rn(o[j][2 * h], l_run[h]);
      y[1] = __fdiv_rn(o[j][2 * h + 1], l_run[h]);
    }
  }
}

// grid (row tiles, KV heads): tile x takes rows [x·per_block, +per_block)
// (the last rows first: they see the most keys), one sequence at a time.
template <Elem E, int kMaxD, bool kSplit>
__global__ void __launch_bounds__(kThreads)
    PromptAttentionKernel(const float* q, const uint16_t* k_cache, const uint16_t* v_cache, const AttentionSeq* seqs,
                          int64_t n_seqs, AttentionParams p, float scale_log2, float* out) {
  WaitForPriorGrid();
  extern __shared__ __align__(16) uint16_t smem[];
  const int64_t per_block = kRows / (p.n_heads / p.n_kv_heads);
  const int64_t r_begin = (static_cast<int64_t>(gridDim.x) - 1 - blockIdx.x) * per_block;
  const int64_t r_end = min(r_begin + per_block, p.n_rows);
  for (int64_t r = r_begin; r < r_end;) {
    AttentionSeq seq;
    if (!FindSeq(seqs, n_seqs, r, &seq)) {
      ++r;
      continue;
    }
    const int64_t seg_end = min(r_end, seq.q_row + seq.n_new);
    AttendRows<E, kMaxD, kSplit>(q, k_cache, v_cache, p, scale_log2, seq, r_begin, r, seg_end, smem, out);
    r = seg_end;
  }
}

template <Elem E, int kMaxD, bool kSplit>
void Launch(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs, int64_t n_seqs,
            const AttentionParams& p, float* out, cudaStream_t s) {
  const int64_t per_block = kRows / (p.n_heads / p.n_kv_heads);
  const size_t smem = static_cast<size_t>(((kSplit ? 2 : 1) * kRows + 2 * kKeys) * (p.head_dim + 8)) * 2 +
                      kKeys * sizeof(int64_t);
  auto* kernel = PromptAttentionKernel<E, kMaxD, kSplit>;
  if (smem > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  const dim3 grid(static_cast<unsigned>((p.n_rows + per_block - 1) / per_block), static_cast<unsigned>(p.n_kv_heads));
  LaunchPdl(kernel, grid, kThreads, smem, s, q, static_cast<const uint16_t*>(k_cache),
            static_cast<const uint16_t*>(v_cache), seqs, n_seqs, p, p.scale * kLog2e, out);
}

template <Elem E, bool kSplit>
void LaunchFor(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs, int64_t n_seqs,
               const AttentionParams& p, float* out, cudaStream_t s) {
  if (p.head_dim <= 64) {
    Launch<E, 64, kSplit>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  } else if (p.head_dim <= 128) {
    Launch<E, 128, kSplit>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  } else {
    Launch<E, 256, kSplit>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  }
}

}  // namespace

bool PromptAttentionEnabled() {
  return EnvSwitch("LLMHOST_CUDA_PROMPT_ATTENTION", true);
}

bool PromptAttentionFits(const AttentionParams& p) {
  if (p.kv_dtype != DType::kBF16 && p.kv_dtype != DType::kF16) return false;
  if (p.head_dim <= 0 || p.head_dim % 16 != 0 || p.head_dim > 256) return false;
  if (p.n_kv_heads <= 0 || p.n_heads % p.n_kv_heads != 0) return false;
  return kRows % (p.n_heads / p.n_kv_heads) == 0;
}

void LaunchPromptAttention(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                           int64_t n_seqs, const AttentionParams& p, bool split_q, float* out, cudaStream_t s) {
  if (p.n_rows <= p.n_generated_rows || n_seqs <= 0) return;
  if (p.kv_dtype == DType::kBF16) {
    split_q ? LaunchFor<Elem::kBF16, true>(q, k_cache, v_cache, seqs, n_seqs, p, out, s)
            : LaunchFor<Elem::kBF16, false>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  } else {
    split_q ? LaunchFor<Elem::kF16, true>(q, k_cache, v_cache, seqs, n_seqs, p, out, s)
            : LaunchFor<Elem::kF16, false>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  }
}

}  // namespace llmhost::cuda
