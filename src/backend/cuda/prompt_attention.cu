#include "backend/cuda/env_switch.h"
#include "backend/cuda/prompt_attention.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <cstring>

#include "backend/cuda/attention_rows.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/device_caps.h"
#include "backend/cuda/prompt_attention_tile.cuh"

namespace llmhost::cuda {
namespace {

using namespace prompt_tile;

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

// One block's rows [a, b) of one sequence (the other rows of the block are
// left out, and so are generated rows): q into shared memory, then the key
// tiles in order (with two stages, each tile's K/V copied while the one
// before it is used).
template <Elem E, int kMaxD, bool kSplit, int kWarps, int kStages>
__device__ __forceinline__ void AttendRows(const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
                                           const AttentionParams& p, float scale_log2, const AttentionSeq& seq,
                                           int64_t r_begin, int64_t a, int64_t b, uint16_t* smem, float* out) {
  constexpr int kRows = 16 * kWarps, kThreads = 32 * kWarps;
  const int d = static_cast<int>(p.head_dim), stride = d + 8;  // padded: ldmatrix rows in distinct banks
  const int group = static_cast<int>(p.n_heads / p.n_kv_heads);
  const int per_block = kRows / group;  // positions; row m is head m / per_block at position m % per_block
  const int64_t kv_head = blockIdx.y;
  const int64_t end = PromptRunEnd(seq, a, b);
  if (end <= a) return;
  uint16_t* q_hi = smem;
  uint16_t* q_lo = q_hi + kRows * stride;
  uint16_t* stages = q_hi + (kSplit ? 2 : 1) * kRows * stride;  // kStages of [K tile, V tile]
  const int stage_elems = 2 * kKeys * stride;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  __syncthreads();  // the previous rows' q and tiles are read
  for (int i = threadIdx.x; i < kRows * d; i += kThreads) {
    const int m = i / d, c = i % d;
    const float v = QAt(q, p, r_begin, a, end, per_block, group, kv_head, m, c);
    uint16_t hi, lo;
    Split<E, kSplit>(v, &hi, &lo);
    q_hi[m * stride + c] = hi;
    if constexpr (kSplit) q_lo[m * stride + c] = lo;
  }

  const LaneRows rows(seq, p, r_begin, a, end, per_block, group, kv_head, warp, lane);
  int64_t seg_lo, seg_pos, unused;
  KeyRange(seq, a, p.window, &seg_lo, &unused);
  KeyRange(seq, end - 1, p.window, &unused, &seg_pos);
  const int first_key = static_cast<int>(seg_lo / kKeys * kKeys);
  const int n_tiles = static_cast<int>((seg_pos - first_key) / kKeys) + 1;

  // Tile t's K and V into stage t % kStages, one commit group. Keys past
  // the cache are zeros (no row sees them).
  const int chunks = d / 8;  // 16-byte pieces of a K/V row
  auto copy_tile = [&](int t) {
    uint16_t* ks = stages + (t % kStages) * stage_elems;
    uint16_t* vs = ks + kKeys * stride;
    const int key0 = first_key + t * kKeys;
    for (int i = threadIdx.x; i < kKeys * chunks; i += kThreads) {
      const int key = i / chunks, c = (i % chunks) * 8;
      const int j = key0 + key;
      const bool in = j < seq.kv_len;
      const int64_t at = in ? KeyRowAt(seq, p, j, kv_head) + c : 0;
      CopyAsync16(ks + key * stride + c, k_cache + at, in);
      CopyAsync16(vs + key * stride + c, v_cache + at, in);
    }
    CopyAsyncCommit();
  };

  float o[kMaxD / 8][4];
#pragma unroll
  for (int j = 0; j < kMaxD / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};

  if constexpr (kStages == 2) copy_tile(0);
  for (int t = 0; t < n_tiles; ++t) {
    if constexpr (kStages == 2) {
      if (t + 1 < n_tiles) {
        copy_tile(t + 1);  // its stage was last read in tile t - 1, before that tile's closing barrier
      } else {
        CopyAsyncCommit();  // an empty group: the wait below still leaves one pending
      }
      CopyAsyncWait<1>();
    } else {
      copy_tile(t);
      CopyAsyncWait<0>();
    }
    __syncthreads();  // tile t is in (and, the first time, q is written)
    const uint16_t* ks = stages + (t % kStages) * stage_elems;
    const uint16_t* vs = ks + kKeys * stride;
    const int key0 = first_key + t * kKeys;
    // A tile none of the warp's rows sees changes none of their bits: skipped.
    // A tile every row sees in full needs no mask (the same values).
    if (!rows.Skips(key0)) {
      float s[8][4];
#pragma unroll
      for (int j = 0; j < 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
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
      SoftmaxTile<kMaxD>(s, o, m_run, l_run, rows, key0, rows.SeesAll(key0), p, scale_log2, lane);
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        uint32_t ph[4], pl[4];
        PackProbabilities<E, kSplit>(s, kk, ph, pl);
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
    __syncthreads();  // tile t's stage is read: tile t + kStages may go there
  }
  CopyAsyncWait<0>();  // the last group (empty with two stages)

  StoreRows<kMaxD>(o, l_run, rows, p, d, lane, out);
}

// grid (row tiles, KV heads): tile x takes rows [x·per_block, +per_block)
// (the last rows first: they see the most keys), one sequence at a time.
// Eight warps a block (128 rows) read each K/V tile for twice the rows of
// four, in at most 128 registers a thread: two blocks an SM. kStages K/V
// stages: 2 (the next tile copied while this one is used) with 8 warps; 1
// with 4, where two stages of 4 warps measured slower than one (fewer blocks
// an SM) and where the GPU's shared memory holds no more.
template <Elem E, int kMaxD, bool kSplit, int kWarps, int kStages>
__global__ void __launch_bounds__(32 * kWarps, kWarps == 8 ? 2 : 1)
    PromptAttentionKernel(const float* q, const uint16_t* k_cache, const uint16_t* v_cache, const AttentionSeq* seqs,
                          int64_t n_seqs, AttentionParams p, float scale_log2, float* out) {
  WaitForPriorGrid();
  extern __shared__ __align__(16) uint16_t smem[];
  ForEachRun(seqs, n_seqs, p, 16 * kWarps, [&](const AttentionSeq& seq, int64_t r_begin, int64_t a, int64_t b) {
    AttendRows<E, kMaxD, kSplit, kWarps, kStages>(q, k_cache, v_cache, p, scale_log2, seq, r_begin, a, b, smem, out);
  });
}

// q's terms, then the stages of a K and a V tile (16-bit, rows padded by 8).
size_t SharedBytes(int64_t head_dim, bool split, int warps, int stages) {
  return static_cast<size_t>(((split ? 2 : 1) * 16 * warps + 2 * stages * kKeys) * (head_dim + 8)) * 2;
}

template <Elem E, int kMaxD, bool kSplit, int kWarps, int kStages>
void Launch(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs, int64_t n_seqs,
            const AttentionParams& p, float* out, cudaStream_t s) {
  constexpr int kRows = 16 * kWarps;
  const int64_t per_block = kRows / (p.n_heads / p.n_kv_heads);
  const size_t smem = SharedBytes(p.head_dim, kSplit, kWarps, kStages);
  auto* kernel = PromptAttentionKernel<E, kMaxD, kSplit, kWarps, kStages>;
  if (smem > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  const dim3 grid(static_cast<unsigned>((p.n_rows + per_block - 1) / per_block), static_cast<unsigned>(p.n_kv_heads));
  LaunchPdl(kernel, grid, 32 * kWarps, smem, s, q, static_cast<const uint16_t*>(k_cache),
            static_cast<const uint16_t*>(v_cache), seqs, n_seqs, p, p.scale * kLog2e, out);
}

// 8 warps and two stages up to head_dim 128 where the GPU's shared memory
// holds them, unless LLMHOST_CUDA_PROMPT_ATTENTION_WARPS=4; else 4 warps and
// one stage (the same bits: a row's arithmetic does not depend on its block
// or on when its tiles were copied).
template <Elem E, int kMaxD, bool kSplit>
void LaunchWarps(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs, int64_t n_seqs,
                 const AttentionParams& p, float* out, cudaStream_t s) {
  const char* v = std::getenv("LLMHOST_CUDA_PROMPT_ATTENTION_WARPS");
  if constexpr (kMaxD <= 128) {
    if ((v == nullptr || std::strcmp(v, "4") != 0) &&
        SharedBytes(p.head_dim, kSplit, 8, 2) <= static_cast<size_t>(MaxSharedPerBlock())) {
      return Launch<E, kMaxD, kSplit, 8, 2>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
    }
  }
  Launch<E, kMaxD, kSplit, 4, 1>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
}

template <Elem E, bool kSplit>
void LaunchFor(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs, int64_t n_seqs,
               const AttentionParams& p, float* out, cudaStream_t s) {
  if (p.head_dim <= 64) {
    LaunchWarps<E, 64, kSplit>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  } else if (p.head_dim <= 128) {
    LaunchWarps<E, 128, kSplit>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  } else {
    LaunchWarps<E, 256, kSplit>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  }
}

}  // namespace

bool PromptAttentionEnabled() {
  return EnvSwitch("LLMHOST_CUDA_PROMPT_ATTENTION", true);
}

bool PromptAttentionFits(const AttentionParams& p, bool split_q) {
  if (p.kv_dtype != DType::kBF16 && p.kv_dtype != DType::kF16) return false;
  if (p.head_dim <= 0 || p.head_dim % 16 != 0 || p.head_dim > 256) return false;
  if (p.n_kv_heads <= 0 || p.n_heads % p.n_kv_heads != 0) return false;
  if (kMinRows % (p.n_heads / p.n_kv_heads) != 0) return false;
  return SharedBytes(p.head_dim, split_q, 4, 1) <= static_cast<size_t>(MaxSharedPerBlock());
}

void LaunchPromptAttention(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                           int64_t n_seqs, const AttentionParams& p, bool split_q, float* out, cudaStream_t s) {
  if (p.n_rows <= p.n_generated_rows || n_seqs <= 0) return;
  if (!split_q && LaunchPromptAttentionWgmma(q, k_cache, v_cache, seqs, n_seqs, p, out, s)) return;
  if (p.kv_dtype == DType::kBF16) {
    split_q ? LaunchFor<Elem::kBF16, true>(q, k_cache, v_cache, seqs, n_seqs, p, out, s)
            : LaunchFor<Elem::kBF16, false>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  } else {
    split_q ? LaunchFor<Elem::kF16, true>(q, k_cache, v_cache, seqs, n_seqs, p, out, s)
            : LaunchFor<Elem::kF16, false>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  }
}

}  // namespace llmhost::cuda
