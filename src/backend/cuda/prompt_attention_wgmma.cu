// Prompt rows' attention on Hopper's warpgroup MMA (sm_90a): the kernel of
// prompt_attention.cu for bf16 K/V, head_dim 64 or 128 and one 16-bit term,
// with q·k and p·v on wgmma instead of each warp's mma.sync.
//
// A block of two warpgroups takes 128 (position, query head) rows of one KV
// head, as the mma.sync kernel does. q goes to shared memory once, as wgmma's
// K-major A operand; each 64-key tile of K and V is copied (cp.async, while
// the tile before it is used) into core matrices of 8 keys x 16 bytes, which
// serve as K-major B for q·kᵀ (N = keys) and as N-major B for p·v (N = the
// head's columns, the transposed read). A warpgroup reads each tile once for
// its 64 rows, where mma.sync had every warp read all of it through ldmatrix.
// The scores come back in mma.sync's accumulator layout (each warp's 16 rows),
// so the online softmax, the probabilities as the A operand of p·v, and the
// output are prompt_attention_tile.cuh's, the same code as the mma.sync
// kernel's. wgmma sums a k16 step as mma.sync does (bench/gpu/wgmma_bits.cu),
// so the two kernels give the same bits; the tests compare them.
#include "backend/cuda/prompt_attention.cuh"

#include <cstdlib>
#include <cstring>

#include "backend/cuda/attention_rows.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/device_caps.h"
#include "backend/cuda/env_switch.h"
#include "backend/cuda/prompt_attention_tile.cuh"
#include "backend/cuda/wgmma.cuh"

namespace llmhost::cuda {
namespace {

using namespace prompt_tile;

constexpr int kRows = 128;  // two warpgroups of 64
constexpr int kThreads = 256;

template <int kD>
constexpr size_t SharedBytes() {
  return static_cast<size_t>(kRows + 4 * kKeys) * kD * 2;  // q, then two stages of a K and a V tile
}

#if defined(LLMHOST_WGMMA_DEVICE)
// s += q · kᵀ for one k16 step of a warpgroup's 64 rows and 64 keys, both by descriptor.
__device__ __forceinline__ void WgmmaSS64(float (&d)[8][4], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "l"(a), "l"(b));
}

// o += p · v for 16 keys: p (the probabilities) from registers, v by
// descriptor, N-major (its rows are keys). N = 64 or 128 columns.
__device__ __forceinline__ void WgmmaRSTransposed(float (&d)[8][4], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

__device__ __forceinline__ void WgmmaRSTransposed(float (&d)[16][4], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}


// Byte offset of element (r, c) of a matrix of `chunks` 16-byte columns laid
// out as core matrices of 8 rows x 16 bytes: 8-row groups one after the
// other, within a group the core matrices in column order.
__device__ __forceinline__ uint32_t CoreOffset(int r, int c, int chunks) {
  return static_cast<uint32_t>((((r >> 3) * chunks + (c >> 3)) * 8 + (r & 7)) * 16 + (c & 7) * 2);
}

template <int kD>
__device__ __forceinline__ void AttendRowsWg(const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
                                             const AttentionParams& p, float scale_log2, const AttentionSeq& seq,
                                             int64_t r_begin, int64_t a, int64_t b, unsigned char* smem, float* out) {
  constexpr int kChunks = kD / 8;                     // 16-byte pieces of a row
  constexpr uint32_t kGroupBytes = kChunks * 128;     // one 8-row group of core matrices
  constexpr uint32_t kTileBytes = kKeys * kD * 2;
  const int group = static_cast<int>(p.n_heads / p.n_kv_heads);
  const int per_block = kRows / group;
  const int64_t kv_head = blockIdx.y;
  const int64_t end = PromptRunEnd(seq, a, b);
  if (end <= a) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wg = warp >> 2;
  const uint32_t q_base = SharedAddress(smem), stage_base = q_base + kRows * kD * 2;

  __syncthreads();  // the previous rows' q and tiles are read
  for (int i = threadIdx.x; i < kRows * kD; i += kThreads) {
    const int m = i / kD, c = i % kD;
    const float v = QAt(q, p, r_begin, a, end, per_block, group, kv_head, m, c);
    *reinterpret_cast<uint16_t*>(smem + CoreOffset(m, c, kChunks)) = To16<Elem::kBF16>(v);
  }

  const LaneRows rows(seq, p, r_begin, a, end, per_block, group, kv_head, warp, lane);
  // The warpgroup's rows hold one run of positions (all the block's where a
  // GQA group of 2 or more fills 64 rows with fewer positions): the keys
  // some row of it sees, for skipping tiles (a wgmma is the warpgroup's).
  const int64_t wg_first = per_block <= 64 ? r_begin : r_begin + 64 * wg;
  const int64_t wg_last = (per_block <= 64 ? r_begin + per_block : wg_first + 64) - 1;
  const int64_t lo_row = wg_first > a ? wg_first : a, hi_row = wg_last < end - 1 ? wg_last : end - 1;
  const bool wg_rows = lo_row <= hi_row;
  int64_t wg_lo = 0, wg_hi = 0, unused;
  if (wg_rows) {
    KeyRange(seq, lo_row, p.window, &wg_lo, &unused);
    KeyRange(seq, hi_row, p.window, &unused, &wg_hi);
  }
  int64_t seg_lo, seg_pos;
  KeyRange(seq, a, p.window, &seg_lo, &unused);
  KeyRange(seq, end - 1, p.window, &unused, &seg_pos);
  const int first_key = static_cast<int>(seg_lo / kKeys * kKeys);
  const int n_tiles = static_cast<int>((seg_pos - first_key) / kKeys) + 1;

  // Tile t's K and V into stage t % 2, one commit group: 8 consecutive
  // threads fill one core matrix (8 keys' same 16 bytes), so that the
  // shared-memory writes do not collide. Keys past the cache are zeros.
  auto copy_tile = [&](int t) {
    unsigned char* ks = smem + (stage_base - q_base) + (t & 1) * 2 * kTileBytes;
    unsigned char* vs = ks + kTileBytes;
    const int key0 = first_key + t * kKeys;
    for (int i = threadIdx.x; i < kKeys * kChunks; i += kThreads) {
      const int r = i & 7, c = (i >> 3) % kChunks, key = 8 * ((i >> 3) / kChunks) + r;
      const int j = key0 + key;
      const bool in = j < seq.kv_len;
      const int64_t at = in ? KeyRowAt(seq, p, j, kv_head) + c * 8 : 0;
      const uint32_t off = CoreOffset(key, c * 8, kChunks);
      CopyAsync16(ks + off, k_cache + at, in);
      CopyAsync16(vs + off, v_cache + at, in);
    }
    CopyAsyncCommit();
  };

  float o[kD / 8][4];
#pragma unroll
  for (int j = 0; j < kD / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  const uint32_t q_wg = q_base + wg * 8 * kGroupBytes;  // the warpgroup's 64 rows

  copy_tile(0);
  for (int t = 0; t < n_tiles; ++t) {
    if (t + 1 < n_tiles) {
      copy_tile(t + 1);  // its stage was last read in tile t - 1, before that tile's closing barrier
    } else {
      CopyAsyncCommit();  // an empty group: the wait below still leaves one pending
    }
    CopyAsyncWait<1>();
    AsyncProxyFence();  // this thread's copies (and q's stores) seen by wgmma
    __syncthreads();    // tile t is in
    const int key0 = first_key + t * kKeys;
    if (wg_rows && key0 <= wg_hi && key0 + kKeys - 1 >= wg_lo) {
      const uint32_t ks = stage_base + (t & 1) * 2 * kTileBytes, vs = ks + kTileBytes;
      float s[8][4];
#pragma unroll
      for (int j = 0; j < 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
      WgFence();
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        // A: the rows' columns [16 kk, +16); B: the keys' (K-major: core
        // matrices 128 bytes apart along k, 8-row groups kGroupBytes apart).
        WgmmaSS64(s, WgDesc(q_wg + kk * 256, 128, kGroupBytes), WgDesc(ks + kk * 256, 128, kGroupBytes));
      }
      WgCommit();
      WgWait<0>();
      SoftmaxTile<kD>(s, o, m_run, l_run, rows, key0, rows.SeesAll(key0), p, scale_log2, lane);
      uint32_t ph[kKeys / 16][4], unused_lo[4];
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) PackProbabilities<Elem::kBF16, false>(s, kk, ph[kk], unused_lo);
      WgFence();
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        // B: keys [16 kk, +16) (two 8-key groups kGroupBytes apart along k),
        // the columns' core matrices 128 bytes apart along N.
        WgmmaRSTransposed(o, ph[kk], WgDesc(vs + kk * 2 * kGroupBytes, kGroupBytes, 128));
      }
      WgCommit();
      WgWait<0>();
    }
    __syncthreads();  // tile t's stage is read: tile t + 2 may go there
  }
  CopyAsyncWait<0>();  // the last (empty) group

  StoreRows<kD>(o, l_run, rows, p, kD, lane, out);
}
#endif

// grid (row tiles, KV heads) as the mma.sync kernel's. Two blocks an SM
// (128 registers a thread, a few spilled) unless
// LLMHOST_CUDA_PROMPT_ATTENTION_WGMMA_BLOCKS=1: one, with the registers it
// wants.
template <int kD, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    PromptAttentionWgmmaKernel(const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
                               const AttentionSeq* seqs, int64_t n_seqs, AttentionParams p, float scale_log2,
                               float* out) {
#if defined(LLMHOST_WGMMA_DEVICE)
  WaitForPriorGrid();
  extern __shared__ __align__(128) unsigned char smem[];
  ForEachRun(seqs, n_seqs, p, kRows, [&](const AttentionSeq& seq, int64_t r_begin, int64_t a, int64_t b) {
    AttendRowsWg<kD>(q, k_cache, v_cache, p, scale_log2, seq, r_begin, a, b, smem, out);
  });
#endif
}

template <int kD, int kMinBlocks>
void Launch(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs, int64_t n_seqs,
            const AttentionParams& p, float* out, cudaStream_t s) {
  const int64_t per_block = kRows / (p.n_heads / p.n_kv_heads);
  constexpr size_t smem = SharedBytes<kD>();
  auto* kernel = PromptAttentionWgmmaKernel<kD, kMinBlocks>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  const dim3 grid(static_cast<unsigned>((p.n_rows + per_block - 1) / per_block), static_cast<unsigned>(p.n_kv_heads));
  LaunchPdl(kernel, grid, kThreads, smem, s, q, static_cast<const uint16_t*>(k_cache),
            static_cast<const uint16_t*>(v_cache), seqs, n_seqs, p, p.scale * kLog2e, out);
}

}  // namespace

// The caller (LaunchPromptAttention) has checked PromptAttentionFits, that
// some rows are prompt rows, and that q is one term.
bool LaunchPromptAttentionWgmma(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                                int64_t n_seqs, const AttentionParams& p, float* out, cudaStream_t s) {
  if (p.kv_dtype != DType::kBF16 || (p.head_dim != 64 && p.head_dim != 128)) return false;
  // Opt-in until it has run on a GPU: LLMHOST_CUDA_PROMPT_ATTENTION_WGMMA=on.
  if (!EnvSwitch("LLMHOST_CUDA_PROMPT_ATTENTION_WGMMA", false) || !Sm90aDevice()) return false;
  if (static_cast<size_t>(MaxSharedPerBlock()) < (p.head_dim == 64 ? SharedBytes<64>() : SharedBytes<128>())) {
    return false;
  }
  const char* v = std::getenv("LLMHOST_CUDA_PROMPT_ATTENTION_WGMMA_BLOCKS");
  const bool one = v != nullptr && std::strcmp(v, "1") == 0;
  if (p.head_dim == 64) {
    one ? Launch<64, 1>(q, k_cache, v_cache, seqs, n_seqs, p, out, s) : Launch<64, 2>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  } else {
    one ? Launch<128, 1>(q, k_cache, v_cache, seqs, n_seqs, p, out, s)
        : Launch<128, 2>(q, k_cache, v_cache, seqs, n_seqs, p, out, s);
  }
  return true;
}

}  // namespace llmhost::cuda
