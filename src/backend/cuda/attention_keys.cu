#include <algorithm>

#include "backend/cuda/attention.cuh"
#include "backend/cuda/attention_keys.cuh"
#include "backend/cuda/attention_rows.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/env_switch.h"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 128;  // one key of the chunk a thread
static_assert(kAttentionChunk == kThreads, "a thread per key of a chunk");
constexpr int kHeadTile = 4;   // query heads summed at once (registers: 4 dots, 4 x 8 outputs)

// Eight 16-bit elements (one 16-byte word) as f32.
template <Elem E>
__device__ __forceinline__ void Unpack8(uint4 w, float (&v)[8]) {
  const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint16_t lo = static_cast<uint16_t>(words[j]), hi = static_cast<uint16_t>(words[j] >> 16);
    v[2 * j] = E == Elem::kBF16 ? Bf16ToF32(lo) : F16ToF32(lo);
    v[2 * j + 1] = E == Elem::kBF16 ? Bf16ToF32(hi) : F16ToF32(hi);
  }
}

// Elements [i, i + 8) of a K/V cache as f32 (i a multiple of 8: 8-byte
// aligned for FP8, 16 for 16-bit types, 32 for f32).
template <Elem E>
__device__ __forceinline__ void Load8(const void* base, int64_t i, float (&v)[8]) {
  if constexpr (E == Elem::kF32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(base) + i);
    const float4 a = p[0], b = p[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else if constexpr (E == Elem::kF8) {
    const uint2 w = *reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(base) + i);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = Fp8E4M3ToF32(((j < 4 ? w.x : w.y) >> (8 * (j & 3))) & 0xFFu);
  } else {
    Unpack8<E>(*reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(base) + i), v);
  }
}

// Scores with the chunk's K staged through shared memory (16-bit K, a group
// of at most kHeadTile heads; the default): K comes in pieces of 32
// columns, 4 threads reading a key's 64 bytes (where a thread reading its
// own key's row makes a warp's read touch 32 rows),
// into `stage` (2 buffers of 128 keys x 64 bytes, the 16-byte slots of key r
// swizzled by (r >> 1) & 3 so that 8 threads reading 8 keys' slot s hit 8
// bank groups); a piece loads while the one before is summed. Each thread
// then sums its key's columns in order, as the direct path: the same bits.
// Every thread of the block calls it (it synchronizes).
constexpr int kPieceCols = 32;
template <Elem E, int D>
__device__ __forceinline__ void StagedScores(const void* k_cache, const int64_t* slot, const float* qs, int group,
                                             int k_lo, int k_hi, uint4* stage, float (&dot)[kHeadTile]) {
  static_assert(E == Elem::kBF16 || E == Elem::kF16, "16-bit K");
  constexpr int kPieces = D / kPieceCols, kSlots = kPieceCols / 8, kBuf = kAttentionChunk * kSlots;
  const int t = threadIdx.x;
  const bool mine = t >= k_lo && t <= k_hi;
  auto load = [&](int piece) {
    uint4* buf = stage + (piece & 1) * kBuf;
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      const int idx = t + kThreads * i, r = idx / kSlots, sl = idx % kSlots;
      const bool valid = r >= k_lo && r <= k_hi;
      const uint16_t* src = static_cast<const uint16_t*>(k_cache) + (valid ? slot[r] + piece * kPieceCols + sl * 8 : 0);
      CopyAsync16(buf + r * kSlots + (sl ^ ((r >> 1) & (kSlots - 1))), src, valid);
    }
    CopyAsyncCommit();
  };
  load(0);
#pragma unroll 1
  for (int piece = 0; piece < kPieces; ++piece) {
    if (piece + 1 < kPieces) {
      load(piece + 1);
      CopyAsyncWait<1>();
    } else {
      CopyAsyncWait<0>();
    }
    __syncthreads();
    if (mine) {
      const uint4* buf = stage + (piece & 1) * kBuf;
#pragma unroll
      for (int sl = 0; sl < kSlots; ++sl) {
        float kv[8];
        Unpack8<E>(buf[t * kSlots + (sl ^ ((t >> 1) & (kSlots - 1)))], kv);
        const int c = piece * kPieceCols + sl * 8;
#pragma unroll
        for (int gi = 0; gi < kHeadTile; ++gi) {
          if (gi < group) {
            const float* qg = qs + gi * D + c;
#pragma unroll
            for (int j = 0; j < 8; ++j) dot[gi] = fmaf(qg[j], kv[j], dot[gi]);
          }
        }
      }
    }
    __syncthreads();  // the buffer is refilled two pieces on
  }
}

// The outputs' V rows staged through shared memory likewise (16-bit V, with
// K staged; the default): pieces of 8 KB (kKeys keys' rows, 16-byte copies
// side by side along a row), two in flight. The first
// piece is issued before the softmax so that its copies overlap it. Thread
// (kl, cg) then sums its keys k ≡ kl (mod kKeyLanes) in order, as the
// direct path: the same bits.
template <int D>
struct ValuePieces {
  static constexpr int kRowSlots = D / 8, kKeys = 8192 / (D * 2), kBuf = kKeys * kRowSlots;
  static_assert(kBuf % kThreads == 0, "whole copies a thread");
  static __device__ __forceinline__ void Issue(int piece, const void* v_cache, const int64_t* slot, int k_lo,
                                               int k_hi, uint4* stage) {
    uint4* buf = stage + (piece & 1) * kBuf;
#pragma unroll
    for (int i = 0; i < kBuf / kThreads; ++i) {
      const int idx = threadIdx.x + kThreads * i, key = piece * kKeys + idx / kRowSlots;
      const bool valid = key >= k_lo && key <= k_hi;
      const uint16_t* src = static_cast<const uint16_t*>(v_cache) + (valid ? slot[key] + idx % kRowSlots * 8 : 0);
      CopyAsync16(buf + idx, src, valid);
    }
    CopyAsyncCommit();
  }
};
template <Elem E, int D>
__device__ __forceinline__ void StagedValues(const void* v_cache, const int64_t* slot, const float* sc, int group,
                                             int k_lo, int k_hi, uint4* stage, float (&acc)[kHeadTile][8]) {
  using VP = ValuePieces<D>;
  constexpr int kKeyLanes = kThreads / (D / 8);
  const int cg = threadIdx.x % (D / 8), kl = threadIdx.x / (D / 8);
  const int first = k_lo / VP::kKeys, last = k_hi / VP::kKeys;  // piece `first` is in flight already
#pragma unroll 1
  for (int piece = first; piece <= last; ++piece) {
    if (piece < last) {
      VP::Issue(piece + 1, v_cache, slot, k_lo, k_hi, stage);
      CopyAsyncWait<1>();
    } else {
      CopyAsyncWait<0>();
    }
    __syncthreads();
    const uint4* buf = stage + (piece & 1) * VP::kBuf;
#pragma unroll
    for (int r = kl; r < VP::kKeys; r += kKeyLanes) {
      const int k = piece * VP::kKeys + r;
      if (k < k_lo || k > k_hi) continue;
      float v[8];
      Unpack8<E>(buf[r * VP::kRowSlots + cg], v);
#pragma unroll
      for (int gi = 0; gi < kHeadTile; ++gi) {
        if (gi < group) {
          const float e = sc[gi * kAttentionChunk + k];
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[gi][j] = fmaf(e, v[j], acc[gi][j]);
        }
      }
    }
    __syncthreads();  // the buffer is refilled two pieces on
  }
}

// A row of the key lanes' outputs in shared memory: column c = 8 cg + j at
// 9 cg + j, and rows padded so that the lanes of a warp (1, 2 or 4 key
// lanes of 32, 16 or 8 column groups) storing the same j hit 32 banks.
constexpr int RedRow(int d) { return d / 8 * 9 + (d >= 256 ? 0 : d / 32); }
template <int D>
constexpr int kRedRow = RedRow(D);
__device__ __forceinline__ int RedColumn(int c) { return c / 8 * 9 + c % 8; }

// grid (chunks, n_kv_heads, rows), kThreads threads; dynamic shared memory:
// q [group][D], scores [group][128], the key lanes' outputs
// [KL][kHeadTile][kRedRow] floats, then the chunk's 128 slots. Sums run in
// fixed orders that depend on absolute key positions and D alone: a row's
// partials never depend on its batch.
template <Elem E, int D, int kStage, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    KeyLanesKernel(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs, int64_t n_seqs,
                   AttentionParams p, int64_t row0, int64_t n_chunks, float* part, float* final, bool generated_only) {
  constexpr int kColGroups = D / 8, kKeyLanes = kThreads / kColGroups;
  WaitForPriorGrid();
  extern __shared__ __align__(16) float smem[];  // 16-byte copies into red
  const int64_t chunk = blockIdx.x, kv_head = blockIdx.y, row = row0 + blockIdx.z;
  AttentionSeq seq;
  int64_t lo64, hi64;
  if (!ChunkKeys<kAttentionChunk>(seqs, n_seqs, row, p.window, chunk, generated_only, &seq, &lo64, &hi64)) return;
  if (final != nullptr && !OneChunk<kAttentionChunk>(seq, row, p.window)) final = nullptr;  // the merge's rows
  const int64_t first = chunk * kAttentionChunk;
  const int k_lo = static_cast<int>(lo64), k_hi = static_cast<int>(hi64);  // local, inclusive
  const int group = static_cast<int>(p.n_heads / p.n_kv_heads);
  const int64_t kv_dim = p.n_kv_heads * D;
  float* qs = smem;                                 // [group][D]
  float* sc = qs + group * D;                       // [group][128]
  float* red = sc + group * kAttentionChunk;        // [kKeyLanes][kHeadTile][kRedRow]
  int64_t* slot = reinterpret_cast<int64_t*>(red + kKeyLanes * kHeadTile * kRedRow<D>);  // [128]
  const int t = threadIdx.x;

  for (int i = t; i < group * D; i += kThreads) {
    qs[i] = q[row * p.q_stride + (kv_head * group) * D + i];
  }
  const bool mine = t >= k_lo && t <= k_hi;
  if (mine) {
    const int64_t j = first + t;
    slot[t] = (static_cast<int64_t>(seq.block_table[j / p.block_size]) * p.block_size + j % p.block_size) * kv_dim +
              kv_head * D;
  }
  __syncthreads();

  // Scores: this thread's key against each head, columns in order.
  // kStage: 0 K and V read directly, 1 K staged, 2 K and V staged.
  const bool staged = kStage > 0 && group <= kHeadTile, values_staged = kStage == 2 && staged;
  if (staged) {
    if constexpr (kStage > 0) {
      float dot[kHeadTile] = {0.0f, 0.0f, 0.0f, 0.0f};
      StagedScores<E, D>(k_cache, slot, qs, group, k_lo, k_hi, reinterpret_cast<uint4*>(red), dot);
      if (mine) {
#pragma unroll
        for (int gi = 0; gi < kHeadTile; ++gi) {
          if (gi >= group) break;
          float s = __fmul_rn(dot[gi], p.scale);
          if (p.softcap > 0) s = __fmul_rn(p.softcap, tanhf(__fdiv_rn(s, p.softcap)));
          sc[gi * kAttentionChunk + t] = s;
        }
      }
    }
  } else if (mine) {
    const int64_t ks = slot[t];
    for (int g0 = 0; g0 < group; g0 += kHeadTile) {
      float dot[kHeadTile] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int c = 0; c < D; c += 8) {
        float kv[8];
        Load8<E>(k_cache, ks + c, kv);
#pragma unroll
        for (int gi = 0; gi < kHeadTile; ++gi) {
          if (g0 + gi < group) {
            const float* qg = qs + (g0 + gi) * D + c;
#pragma unroll
            for (int j = 0; j < 8; ++j) dot[gi] = fmaf(qg[j], kv[j], dot[gi]);
          }
        }
      }
#pragma unroll
      for (int gi = 0; gi < kHeadTile; ++gi) {
        if (g0 + gi >= group) break;
        float s = __fmul_rn(dot[gi], p.scale);
        if (p.softcap > 0) s = __fmul_rn(p.softcap, tanhf(__fdiv_rn(s, p.softcap)));
        sc[(g0 + gi) * kAttentionChunk + t] = s;
      }
    }
  }
  __syncthreads();
  if constexpr (kStage == 2) {
    if (values_staged) {
      ValuePieces<D>::Issue(k_lo / ValuePieces<D>::kKeys, v_cache, slot, k_lo, k_hi, reinterpret_cast<uint4*>(red));
    }
  }

  // Per head: the chunk's max, then exp(score - max) in place and their sum.
  float* out = part + ((blockIdx.z * p.n_heads + kv_head * group) * n_chunks + chunk) * (D + 2);
  ChunkSoftmax<kAttentionChunk>(sc, group, k_lo, k_hi, out, n_chunks * (D + 2), kThreads / 32);
  __syncthreads();

  // Outputs: thread (key lane kl, 8 columns cg) sums the keys k ≡ kl (mod
  // kKeyLanes) in order; the lanes' sums are then added in lane order.
  const int cg = t % kColGroups, kl = t / kColGroups;
  const int k_first = k_lo + ((kl - k_lo % kKeyLanes) + kKeyLanes) % kKeyLanes;
  for (int g0 = 0; g0 < group; g0 += kHeadTile) {
    float acc[kHeadTile][8] = {};
    if constexpr (kStage == 2) {
      if (values_staged) StagedValues<E, D>(v_cache, slot, sc, group, k_lo, k_hi, reinterpret_cast<uint4*>(red), acc);
    }
#pragma unroll 4
    for (int k = k_first; k <= k_hi && !values_staged; k += kKeyLanes) {
      float v[8];
      Load8<E>(v_cache, slot[k] + cg * 8, v);
#pragma unroll
      for (int gi = 0; gi < kHeadTile; ++gi) {
        if (g0 + gi < group) {
          const float e = sc[(g0 + gi) * kAttentionChunk + k];
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[gi][j] = fmaf(e, v[j], acc[gi][j]);
        }
      }
    }
#pragma unroll
    for (int gi = 0; gi < kHeadTile; ++gi) {
#pragma unroll
      for (int j = 0; j < 8; ++j) red[(kl * kHeadTile + gi) * kRedRow<D> + cg * 9 + j] = acc[gi][j];
    }
    __syncthreads();
    for (int i = t; i < kHeadTile * D; i += kThreads) {
      const int gi = i / D, c = i % D, g = g0 + gi;
      if (g >= group) continue;
      float a = red[gi * kRedRow<D> + RedColumn(c)];
      for (int l = 1; l < kKeyLanes; ++l) a += red[(l * kHeadTile + gi) * kRedRow<D> + RedColumn(c)];
      if (final != nullptr) {  // the row's one chunk: the merge's arithmetic for it (exp(0) = 1), as ChunkKernel
        const float inv = __fdiv_rn(1.0f, fmaf(1.0f, out[g * n_chunks * (D + 2) + 1], 0.0f));
        final[row * p.out_stride + (kv_head * group + g) * D + c] = __fmul_rn(fmaf(1.0f, a, 0.0f), inv);
      } else {
        out[g * n_chunks * (D + 2) + 2 + c] = a;
      }
    }
    __syncthreads();  // red is rewritten by the next head tile
  }
}

// 16-bit K staged through shared memory (StagedScores; the same bits), by
// default: with 8 blocks an SM, 128 sequences' chunks after 512-token
// prompts took 128 us a layer against 149 read directly (H100);
// LLMHOST_CUDA_KEY_LANES_STAGE_K=off reads each key's row directly.
bool StageKeys() {
  return EnvSwitch("LLMHOST_CUDA_KEY_LANES_STAGE_K", true);
}

// 16-bit V staged too (StagedValues; the same bits), where K is, by
// default: 128 sequences' chunks after 512-token prompts took 115 us a
// layer against 132 (76% of DRAM, H100); LLMHOST_CUDA_KEY_LANES_STAGE_V=off
// reads V directly.
bool StageValues() {
  return EnvSwitch("LLMHOST_CUDA_KEY_LANES_STAGE_V", true);
}

// 16-bit K/V's kernel built for 8 blocks an SM (64 registers, 8 bytes
// spilled) by default; LLMHOST_CUDA_KEY_LANES_BLOCKS=0: ptxas's own count
// (70 or 79: 7 or 6 blocks; a minimum of 1 lets ptxas take 108). 9 blocks
// (56 registers, 32 bytes spilled) measured slower.
bool EightBlocks() {
  const char* v = std::getenv("LLMHOST_CUDA_KEY_LANES_BLOCKS");
  return v == nullptr || std::atoi(v) >= 8;
}

size_t SharedBytes(const AttentionParams& p) {
  const int64_t d = p.head_dim, group = p.n_heads / p.n_kv_heads, lanes = kThreads / (d / 8);
  const int64_t red_row = RedRow(static_cast<int>(d));
  return static_cast<size_t>(group * d + group * kAttentionChunk + lanes * kHeadTile * red_row) * sizeof(float) +
         kAttentionChunk * sizeof(int64_t);
}

}  // namespace

bool KeyLanesEnabled() {
  const char* v = std::getenv("LLMHOST_CUDA_DECODE_ATTENTION");
  return v == nullptr || std::strcmp(v, "warps") != 0;
}

bool KeyLanesFit(const AttentionParams& p, const void* k_cache, const void* v_cache) {
  const bool dim = p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256;
  const auto aligned = [](const void* a) { return (reinterpret_cast<uintptr_t>(a) & 31u) == 0; };
  return dim && p.n_kv_heads > 0 && p.n_heads % p.n_kv_heads == 0 && aligned(k_cache) && aligned(v_cache) &&
         SharedBytes(p) <= 160 * 1024;
}

void LaunchKeyLanesChunks(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                          int64_t n_seqs, const AttentionParams& p, int64_t row0, int64_t rows, int64_t n_chunks,
                          float* part, float* final, bool generated_only, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(n_chunks), static_cast<unsigned>(p.n_kv_heads), static_cast<unsigned>(rows));
  const size_t smem = SharedBytes(p);
  ForElem(ElemOf(p.kv_dtype), [&]<Elem E>() {
    auto launch = [&]<int D>() {
      auto kernel = KeyLanesKernel<E, D, 0, 0>;
      int blocks = 7;  // shared memory asked for: what 7 blocks take (as many as 70 registers allow)
      const size_t per_sm = MaxSharedPerSm() > 0 ? static_cast<size_t>(MaxSharedPerSm()) : 228 * 1024;
      if constexpr (E == Elem::kBF16 || E == Elem::kF16) {
        // Staging and its 8 blocks where a group fits one head tile (else
        // nothing is staged) and 8 blocks' shared memory fits an SM.
        const int group = static_cast<int>(p.n_heads / p.n_kv_heads);
        const int stage = group > kHeadTile || !StageKeys() ? 0 : StageValues() ? 2 : 1;
        if (EightBlocks() && stage > 0 && 8 * (smem + 1024) <= per_sm) {
          kernel = stage == 2 ? KeyLanesKernel<E, D, 2, 8> : KeyLanesKernel<E, D, 1, 8>;
          blocks = 8;
        } else {
          kernel = stage == 2 ? KeyLanesKernel<E, D, 2, 0> : stage == 1 ? KeyLanesKernel<E, D, 1, 0> : kernel;
        }
      }
      if (smem > 48 * 1024) {
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
      }
      // Shared memory for `blocks` of these blocks (a percentage of the SM's
      // most), the rest staying L1.
      const size_t want = static_cast<size_t>(blocks) * (smem + 1024);
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                           static_cast<int>(std::min<size_t>(100, (want * 100 + per_sm - 1) / per_sm)));
      LaunchPdl(kernel, grid, kThreads, smem, s, q, k_cache, v_cache, seqs, n_seqs, p, row0, n_chunks, part, final,
                generated_only);
    };
    if (p.head_dim == 64) {
      launch.template operator()<64>();
    } else if (p.head_dim == 128) {
      launch.template operator()<128>();
    } else {
      launch.template operator()<256>();
    }
  });
}

}  // namespace llmhost::cuda
