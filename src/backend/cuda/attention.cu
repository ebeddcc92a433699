#include "backend/cuda/attention.cuh"
#include "backend/cuda/attention_keys.cuh"
#include "backend/cuda/attention_rows.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/env_switch.h"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kKeysAhead = 4;  // keys a warp loads before it reduces them

// One chunk of kAttentionChunk keys (aligned to absolute positions) for one
// q row and the `group` query heads of one KV head: each head's chunk max m,
// sum of exp(score - m) l and unnormalized output Σ exp(score - m)·v, written
// to `part` at (row, head, chunk). Every sum runs in a fixed order over
// absolute key positions, so a row's partials depend on its own sequence
// only, never on the batch or the launch.
// grid (chunks, n_kv_heads, rows), kThreads threads; dynamic shared memory:
// group·d (q) + group·kAttentionChunk (scores) floats, kAttentionChunk slots.
// With `final` set, where the row's keys lie in one chunk (OneChunk), it
// also does MergeKernel's arithmetic for that chunk (exp(0) = 1: the same
// bits) and writes the row's output there; the merge skips such rows, so
// short contexts under a graph's key bucket (two chunks or more launched,
// one holding keys) need no merge.
template <Elem E, int kPerLane>
__global__ void ChunkKernel(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                            int64_t n_seqs, AttentionParams p, int64_t row0, int64_t n_chunks, float* part,
                            float* final, bool generated_only) {
  WaitForPriorGrid();
  extern __shared__ float smem[];
  const int64_t chunk = blockIdx.x, kv_head = blockIdx.y, row = row0 + blockIdx.z;
  AttentionSeq seq;
  int64_t k_lo, k_hi;  // local, inclusive
  if (!ChunkKeys<kAttentionChunk>(seqs, n_seqs, row, p.window, chunk, generated_only, &seq, &k_lo, &k_hi)) return;
  if (final != nullptr && !OneChunk<kAttentionChunk>(seq, row, p.window)) final = nullptr;
  const int64_t first = chunk * kAttentionChunk;
  const int d = static_cast<int>(p.head_dim);
  const int group = static_cast<int>(p.n_heads / p.n_kv_heads);
  const int64_t kv_dim = p.n_kv_heads * d;
  float* qs = smem;                          // [group][d]
  float* sc = qs + group * d;                // [group][kAttentionChunk]
  int64_t* slot = reinterpret_cast<int64_t*>(sc + group * kAttentionChunk);  // [kAttentionChunk]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  for (int i = threadIdx.x; i < group * d; i += kThreads) {
    const int g = i / d, c = i % d;
    qs[i] = q[row * p.q_stride + (kv_head * group + g) * d + c];
  }
  for (int64_t k = k_lo + threadIdx.x; k <= k_hi; k += kThreads) {
    const int64_t j = first + k;
    slot[k] = (static_cast<int64_t>(seq.block_table[j / p.block_size]) * p.block_size + j % p.block_size) * kv_dim +
              kv_head * d;
  }
  __syncthreads();

  // Scores: warp w takes keys k_lo + w, + kWarps, ...; a score is its lanes'
  // products in column order and the warp's butterfly.
  for (int64_t k0 = k_lo + warp * kKeysAhead; k0 <= k_hi; k0 += kWarps * kKeysAhead) {
    float kv[kKeysAhead][kPerLane];
#pragma unroll
    for (int a = 0; a < kKeysAhead; ++a) {
#pragma unroll
      for (int m = 0; m < kPerLane; ++m) {
        const int c = lane + 32 * m;
        kv[a][m] = k0 + a <= k_hi && c < d ? Load<E>(k_cache, slot[k0 + a] + c) : 0.0f;
      }
    }
    for (int g = 0; g < group; ++g) {
#pragma unroll
      for (int a = 0; a < kKeysAhead; ++a) {
        float dot = 0.0f;
#pragma unroll
        for (int m = 0; m < kPerLane; ++m) {
          const int c = lane + 32 * m;
          if (c < d) dot = fmaf(qs[g * d + c], kv[a][m], dot);
        }
        float s = __fmul_rn(WarpSum(dot), p.scale);
        if (p.softcap > 0) s = __fmul_rn(p.softcap, tanhf(__fdiv_rn(s, p.softcap)));
        if (lane == 0 && k0 + a <= k_hi) sc[g * kAttentionChunk + k0 + a] = s;
      }
    }
  }
  __syncthreads();

  // Per head: the chunk's max, then exp(score - max) in place and their sum
  // (lane-strided, then the butterfly).
  float* out = part + ((blockIdx.z * p.n_heads + kv_head * group) * n_chunks + chunk) * (d + 2);
  ChunkSoftmax<kAttentionChunk>(sc, group, k_lo, k_hi, out, n_chunks * (d + 2), kWarps);
  __syncthreads();

  // Outputs (head g, column c): Σ_k e_k · v_k[c] in key order.
  for (int i = threadIdx.x; i < group * d; i += kThreads) {
    const int g = i / d, c = i % d;
    const float* e = sc + g * kAttentionChunk;
    float acc = 0.0f;
#pragma unroll 4
    for (int64_t k = k_lo; k <= k_hi; ++k) acc = fmaf(e[k], Load<E>(v_cache, slot[k] + c), acc);
    if (final != nullptr) {  // the block's own write of l above is visible after __syncthreads
      const float inv = __fdiv_rn(1.0f, fmaf(1.0f, out[g * n_chunks * (d + 2) + 1], 0.0f));
      final[row * p.out_stride + (kv_head * group + g) * d + c] = __fmul_rn(fmaf(1.0f, acc, 0.0f), inv);
    } else {
      out[g * n_chunks * (d + 2) + 2 + c] = acc;
    }
  }
}

// The chunks [c_lo, c_lo + nc) a merge of `row` sums; false where the row
// needs none: not in the batch, a prompt row when generated_only, or keys in
// one chunk that the chunk kernel finished (one_chunk_done, OneChunk).
__device__ __forceinline__ bool MergeChunks(const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p,
                                            int64_t row, bool generated_only, bool one_chunk_done, int64_t* c_lo,
                                            int64_t* nc) {
  AttentionSeq seq;
  if (!FindSeq(seqs, n_seqs, row, &seq)) return false;
  int64_t lo, pos;
  KeyRange(seq, row, p.window, &lo, &pos);
  if (generated_only && pos < seq.generated_from) return false;
  *c_lo = lo / kAttentionChunk;
  *nc = pos / kAttentionChunk - *c_lo + 1;
  return !(*nc == 1 && one_chunk_done);
}

// Merges a (row, head)'s chunk partials in chunk order: o = Σ_c exp(m_c - M)
// acc_c / Σ_c exp(m_c - M) l_c. grid (rows, n_heads); dynamic shared memory:
// 2 floats a chunk. The block first reads every chunk's m and l at once and
// turns m into its weight exp(m_c - M) (M: the exact max, in any order), so
// that the sums in chunk order below wait on no global read; their values
// and order are those of summing straight from the partials (the one-chunk
// path in the chunk kernels repeats this arithmetic).
__global__ void MergeKernel(const float* part, const AttentionSeq* seqs, int64_t n_seqs, AttentionParams p,
                            int64_t row0, int64_t n_chunks, float* out, bool generated_only, bool one_chunk_done) {
  WaitForPriorGrid();
  extern __shared__ float merge_smem[];
  __shared__ float warp_max[kWarps];
  __shared__ float inv_shared;
  const int64_t row = row0 + blockIdx.x, h = blockIdx.y;
  int64_t c_lo, nc;
  if (!MergeChunks(seqs, n_seqs, p, row, generated_only, one_chunk_done, &c_lo, &nc)) return;
  const int d = static_cast<int>(p.head_dim);
  const float* base = part + ((blockIdx.x * p.n_heads + h) * n_chunks + c_lo) * (d + 2);
  float* wgt = merge_smem;       // [nc]: m_c, then exp(m_c - M)
  float* lsum = merge_smem + n_chunks;  // [nc]: l_c
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < nc; i += kThreads) {
    const float m = base[i * (d + 2)];
    wgt[i] = m;
    lsum[i] = base[i * (d + 2) + 1];
    mx = fmaxf(mx, m);
  }
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, o));
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = mx;
  __syncthreads();
#pragma unroll
  for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, warp_max[w]);
  for (int64_t i = threadIdx.x; i < nc; i += kThreads) wgt[i] = expf(wgt[i] - mx);
  __syncthreads();
  if (threadIdx.x == 0) {
    float l = 0.0f;
    for (int64_t i = 0; i < nc; ++i) l = fmaf(wgt[i], lsum[i], l);
    inv_shared = __fdiv_rn(1.0f, l);
  }
  __syncthreads();
  const float inv = inv_shared;
  for (int col = threadIdx.x; col < d; col += kThreads) {
    float o = 0.0f;
#pragma unroll 8
    for (int64_t i = 0; i < nc; ++i) o = fmaf(wgt[i], base[i * (d + 2) + 2 + col], o);
    out[row * p.out_stride + h * d + col] = __fmul_rn(o, inv);
  }
}

// MergeKernel's sums, a warp a head: grid (rows, heads / kMergeHeads
// rounded up), kMergeHeads warps; dynamic shared memory: 2 floats a chunk a
// warp. A lane reads chunks' m and l side by side and sums its columns
// (lane + 32 j) side by side, so a head waits on two global reads where
// MergeKernel's block waits on one a phase (its launch was latency-bound:
// 15 us a layer at 128 rows on an H100). The values and their order are
// MergeKernel's: the same bits.
constexpr int kMergeHeads = 8;
template <int kCols>
__global__ void __launch_bounds__(kMergeHeads * 32)
    WarpMergeKernel(const float* part, const AttentionSeq* seqs, int64_t n_seqs, AttentionParams p, int64_t row0,
                    int64_t n_chunks, float* out, bool generated_only, bool one_chunk_done) {
  WaitForPriorGrid();
  extern __shared__ float merge_smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t row = row0 + blockIdx.x, h = static_cast<int64_t>(blockIdx.y) * kMergeHeads + warp;
  if (h >= p.n_heads) return;  // warp-uniform, as the return below: only __syncwarp follows
  int64_t c_lo, nc;
  if (!MergeChunks(seqs, n_seqs, p, row, generated_only, one_chunk_done, &c_lo, &nc)) return;
  const int d = static_cast<int>(p.head_dim);
  const float* base = part + ((blockIdx.x * p.n_heads + h) * n_chunks + c_lo) * (d + 2);
  float* wgt = merge_smem + warp * 2 * n_chunks;  // [nc]: m_c, then exp(m_c - M)
  float* lsum = wgt + n_chunks;                   // [nc]: l_c
  float mx = -INFINITY;
  for (int64_t i = lane; i < nc; i += 32) {
    const float m = base[i * (d + 2)];
    wgt[i] = m;
    lsum[i] = base[i * (d + 2) + 1];
    mx = fmaxf(mx, m);
  }
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, o));
  __syncwarp();
  for (int64_t i = lane; i < nc; i += 32) wgt[i] = expf(wgt[i] - mx);
  __syncwarp();
  float l = 0.0f;
  for (int64_t i = 0; i < nc; ++i) l = fmaf(wgt[i], lsum[i], l);
  const float inv = __fdiv_rn(1.0f, l);
  float o[kCols] = {};
#pragma unroll 4
  for (int64_t i = 0; i < nc; ++i) {
    const float w = wgt[i];
    const float* src = base + i * (d + 2) + 2;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      if (lane + 32 * j < d) o[j] = fmaf(w, src[lane + 32 * j], o[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < kCols; ++j) {
    if (lane + 32 * j < d) out[row * p.out_stride + h * d + lane + 32 * j] = __fmul_rn(o[j], inv);
  }
}

// LLMHOST_CUDA_MERGE=block: MergeKernel, a block a head (the same bits).
bool WarpMergeEnabled() {
  const char* v = std::getenv("LLMHOST_CUDA_MERGE");
  return v == nullptr || std::strcmp(v, "block") != 0;
}

// Launches the merge for rows [r0, r0 + rows): a warp a head where its
// weights fit 48 KB of shared memory (up to 768 chunks: 96K keys), else a
// block a head.
void LaunchMerge(const float* scratch, const AttentionSeq* seqs, int64_t n_seqs, const AttentionParams& p, int64_t r0,
                 int64_t rows, int64_t n_chunks, float* out, bool generated_only, bool one_chunk_done, cudaStream_t s) {
  const size_t warp_smem = static_cast<size_t>(kMergeHeads * 2 * n_chunks) * sizeof(float);
  if (WarpMergeEnabled() && warp_smem <= 48 * 1024) {
    const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>((p.n_heads + kMergeHeads - 1) / kMergeHeads));
    auto launch = [&]<int kCols>() {
      LaunchPdl(WarpMergeKernel<kCols>, grid, kMergeHeads * 32, warp_smem, s, scratch, seqs, n_seqs, p, r0, n_chunks,
                out, generated_only, one_chunk_done);
    };
    if (p.head_dim <= 64) {
      launch.template operator()<2>();
    } else if (p.head_dim <= 128) {
      launch.template operator()<4>();
    } else if (p.head_dim <= 256) {
      launch.template operator()<8>();
    } else {
      launch.template operator()<kMaxAttentionHeadDim / 32>();
    }
    return;
  }
  const size_t smem = static_cast<size_t>(2 * n_chunks) * sizeof(float);
  if (smem > 48 * 1024) {
    cudaFuncSetAttribute(MergeKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  }
  LaunchPdl(MergeKernel, dim3(static_cast<unsigned>(rows), static_cast<unsigned>(p.n_heads)), kThreads, smem, s,
            scratch, seqs, n_seqs, p, r0, n_chunks, out, generated_only, one_chunk_done);
}

// Rows whose keys lie in one chunk are finished by the chunk kernel, unless
// LLMHOST_CUDA_ONE_CHUNK=off (the merge then takes every row of a launch of
// several chunks). The same bits either way; on an H100, 32 sequences after
// 16-token prompts 2,932 -> 2,950 tok/s, b1 167.0 -> 167.7.
bool OneChunkRowsDone() {
  return EnvSwitch("LLMHOST_CUDA_ONE_CHUNK", true);
}

}  // namespace

int64_t AttentionChunks(int64_t max_kv_len) { return (max_kv_len + kAttentionChunk - 1) / kAttentionChunk; }

size_t AttentionScratchPerRow(const AttentionParams& p) {
  return static_cast<size_t>(p.n_heads * AttentionChunks(p.max_kv_len) * (p.head_dim + 2)) * sizeof(float);
}

void LaunchAttention(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                     int64_t n_seqs, const AttentionParams& p, float* out, float* scratch, int64_t rows_per_launch,
                     bool generated_only, cudaStream_t s) {
  if (p.n_rows <= 0 || n_seqs <= 0 || p.n_heads <= 0 || p.max_kv_len <= 0) return;
  const int64_t n_chunks = AttentionChunks(p.max_kv_len);
  const int group = static_cast<int>(p.n_heads / p.n_kv_heads);
  const size_t smem = static_cast<size_t>(group) * (p.head_dim + kAttentionChunk) * sizeof(float) +
                      kAttentionChunk * sizeof(int64_t);
  const bool key_lanes = KeyLanesEnabled() && KeyLanesFit(p, k_cache, v_cache);
  const bool done = n_chunks == 1 || OneChunkRowsDone();
  float* const final = done ? out : nullptr;
  for (int64_t r0 = 0; r0 < p.n_rows; r0 += rows_per_launch) {
    const int64_t rows = p.n_rows - r0 < rows_per_launch ? p.n_rows - r0 : rows_per_launch;
    if (key_lanes) {
      LaunchKeyLanesChunks(q, k_cache, v_cache, seqs, n_seqs, p, r0, rows, n_chunks, scratch, final, generated_only,
                           s);
      if (n_chunks > 1) LaunchMerge(scratch, seqs, n_seqs, p, r0, rows, n_chunks, out, generated_only, done, s);
      continue;
    }
    const dim3 grid(static_cast<unsigned>(n_chunks), static_cast<unsigned>(p.n_kv_heads), static_cast<unsigned>(rows));
    ForElem(ElemOf(p.kv_dtype), [&]<Elem E>() {
      // Columns per lane by head_dim: registers for the keys loaded ahead.
      auto launch = [&]<int PL>() {
        if (smem > 48 * 1024) {
          cudaFuncSetAttribute(ChunkKernel<E, PL>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        }
        LaunchPdl(ChunkKernel<E, PL>, grid, kThreads, smem, s, q, k_cache, v_cache, seqs, n_seqs, p, r0, n_chunks,
                  scratch, final, generated_only);
      };
      if (p.head_dim <= 128) {
        launch.template operator()<4>();
      } else if (p.head_dim <= 256) {
        launch.template operator()<8>();
      } else {
        launch.template operator()<kMaxAttentionHeadDim / 32>();
      }
    });
    if (n_chunks == 1) continue;  // the chunk kernel wrote the rows
    LaunchMerge(scratch, seqs, n_seqs, p, r0, rows, n_chunks, out, generated_only, done, s);
  }
}

}  // namespace llmhost::cuda
