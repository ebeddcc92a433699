// bf16 generated rows for a large batch on Hopper's warpgroup MMA (wgmma):
// the same sums, bit for bit, as the mma.sync GEMVs of matmul_mma.cu and
// matmul_mma_wide.cu, at the throughput of a tensor-core GEMM.
//
// Why the bits are the same: a wgmma m64nNk16 whose A (the weight) comes from
// registers takes each warp's 16 rows in mma.sync's m16n8k16 A fragment, and
// gives each output element the same sum as that MMA: the element's own row
// and column only, whatever N is (bench/gpu/wgmma_bits.cu checks both on the
// GPU). So each warp loads its rows' fragments exactly as the GEMVs' lanes do
// (lane c: 16-byte chunks 2c + ch of a 64-column step), and x's terms are
// laid out in shared memory in the k order those fragments imply (`SlotCol`):
// slot s of 16-column group q of a step holds column SlotCol(q, s). The
// steps, parts and terms then follow matmul_mma_gemm.cu's whole walk: the
// columns' 64-column steps dealt over 8 parts (part p: steps p, p + 8, ...),
// each part's MMAs from zero in step order (a step's groups in order, hi then
// lo), the parts added in part order (v = p0, v += p1, ...).
//
// A block: 1 or 2 consumer warpgroups of 64 weight rows each, by 8, 16, 32,
// 64 or 128 tokens, and one producer warp that fills a ring of shared-memory stages
// with bulk copies completing on the stage's mbarrier: the weight's rows of a
// step as one tile of a tensor map (cp.async.bulk.tensor, the 128-byte
// swizzle; one 128-byte copy a row held the second version at ~11 GB/s an
// SM, its warps waiting on the mbarriers), and x's terms for it. x is the
// same for every block of a token tile; with LLMHOST_CUDA_WGMMA_CLUSTER the
// blocks of a cluster (along the rows) each copy a slice of x's stage and
// multicast it to every block of the cluster, a stage refilled once every
// consumer warp of every block of the cluster has released it (measured
// slower than no cluster, the default). With part groups, instead, the G
// blocks of a (1, 1, G) cluster each walk 8 / G of a tile's parts, keep each
// part's sums in shared memory, and add them up in part order through
// distributed shared memory, 1/G of the tile each (the wide kernel's part
// groups): more blocks for a weight of few rows.
#include <cuda.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

#include "backend/cuda/common.cuh"
#include "backend/cuda/device_caps.h"
#include "backend/cuda/env_switch.h"
#include "backend/cuda/matmul_mma.cuh"
#include "backend/cuda/mma_rows.cuh"
#include "backend/cuda/wgmma.cuh"

namespace llmhost::cuda::mma_rows {

// Slot s (0-15) of 16-column group q (0-3) of a 64-column step: the column
// the GEMVs' fragment puts there. Lane c's chunk ch (columns 8 (2c + ch) ..
// +7, ChunkOf) gives group 2 ch + half its columns 4 half + 0, 1 at slots
// 2c, 2c + 1 and 4 half + 2, 3 at slots 2c + 8, 2c + 9 (MmaChunk).
__host__ __device__ constexpr int SlotCol(int q, int s) {
  return ChunkCols(((s & 7) >> 1), q >> 1) + 4 * (q & 1) + 2 * (s >> 3) + (s & 1);
}
constexpr bool SlotColIsAPermutation() {
  bool seen[64] = {};
  for (int q = 0; q < 4; ++q) {
    for (int s = 0; s < 16; ++s) {
      const int col = SlotCol(q, s);
      if (col < 0 || col >= 64 || seen[col]) return false;
      seen[col] = true;
    }
  }
  return true;
}
static_assert(SlotColIsAPermutation(), "a step's slots take each of its 64 columns once");

namespace {

// WGS consumer warpgroups of 64 rows, NT tokens, Split: x as two bf16 terms.
template <int WGS, int NT, bool Split>
struct WgLayout {
  static constexpr int kConsumers = 128 * WGS;
  static constexpr int kThreads = kConsumers + 32;  // and the producer warp
  static constexpr int kRowsBlock = 64 * WGS;
  static constexpr int kTerms = Split ? 2 : 1;
  static constexpr int kMaxStages = 8;
  // A stage: the rows' step, 128 bytes a row as the tensor map's 128-byte
  // swizzle lays it out (row r's 16-byte chunk q at chunk q ^ (r % 8), so
  // that the 8 rows of a fragment load fall in distinct banks; 1024-byte
  // aligned), then x's image (SplitSlotsKernel): [term][group q][8-token
  // group][slot half][token % 8], a core matrix of wgmma's no-swizzle K-major
  // layout 128 bytes.
  static constexpr int kRowStride = kStepCols * 2;
  static constexpr int kWBytes = kRowsBlock * kRowStride;
  static constexpr int kXBytes = kTerms * NT * 128;
  static constexpr int kStageBytes = kWBytes + kXBytes;
  // A part's sums, kept for the cluster's total where a block takes some of
  // the parts: the last one's in the ring (every stage read by then), the
  // others' after the mbarriers.
  static constexpr int kPartBytes = kRowsBlock * NT * 4;
  static_assert(kPartBytes <= 2 * kStageBytes, "a part's sums fit in a ring of 2 stages");
  // `stages` stages, the mbarriers, the sums of `mine` - 1 parts (none where
  // a block takes them all), and room to align the first stage to 1024.
  static constexpr size_t Bytes(int stages, int mine = kParts) {
    return static_cast<size_t>(stages) * kStageBytes + 2 * kMaxStages * 8 +
           (mine < kParts ? static_cast<size_t>(mine - 1) * kPartBytes : 0) + 1024;
  }
  // The most stages (up to kMaxStages) beside `mine` parts' sums in `smem` bytes a block.
  static constexpr int StagesIn(size_t smem, int mine = kParts) {
    int st = kMaxStages;
    while (st > 2 && Bytes(st, mine) > smem) --st;
    return st;
  }
  static constexpr int kAcc = NT / 2;  // an m64nNk16's f32 sums a thread
  static_assert(Bytes(4) <= 227 * 1024, "a block's shared memory");
  static_assert(kWBytes % 1024 == 0 && kXBytes % 1024 == 0, "stages aligned for the swizzle; x's slices of a cluster of 8");
};

// x's terms in slot order, as the image a stage holds: for token tile tt of
// NT tokens and step s, [term][group q][8-token group][slot half][token % 8]
// of 16 bytes (8 slots), the image ((tt steps + s) terms + term) NT 128
// bytes into `terms`; tokens past n are zeros. One thread a token's 8-slot
// half of a step, both terms.
template <int NT>
__global__ void SplitSlotsKernel(const float* x, int64_t n, int64_t steps, int64_t halves, uint4* terms, bool split) {
  WaitForPriorGrid();
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= halves) return;
  const int k8 = static_cast<int>(i & 7);  // group k8 / 2, slots 8 (k8 % 2) ..
  const int64_t ts = i >> 3;               // token tt NT + t, step s: (tt steps + s) NT + t
  const int t = static_cast<int>(ts % NT);
  const int64_t tile_step = ts / NT, tt = tile_step / steps, s = tile_step % steps;
  const int64_t tok = tt * NT + t;
  float v[8] = {};
  if (tok < n) {
    const float* step = x + (tok * steps + s) * kStepCols;
#pragma unroll
    for (int j = 0; j < 8; j += 2) {
      const float2 p = __ldg(reinterpret_cast<const float2*>(step + SlotCol(k8 >> 1, 8 * (k8 & 1) + j)));
      v[j] = p.x, v[j + 1] = p.y;
    }
  }
  uint4 h, l;
  if (split) {
    SplitPair(v[0], v[1], &h.x, &l.x);
    SplitPair(v[2], v[3], &h.y, &l.y);
    SplitPair(v[4], v[5], &h.z, &l.z);
    SplitPair(v[6], v[7], &h.w, &l.w);
  } else {
    h = make_uint4(PackBf16(v[0], v[1]), PackBf16(v[2], v[3]), PackBf16(v[4], v[5]), PackBf16(v[6], v[7]));
  }
  const int terms_n = split ? 2 : 1;
  uint4* image = terms + tile_step * terms_n * NT * 8;
  const int word = (((k8 >> 1) * (NT / 8) + (t >> 3)) * 2 + (k8 & 1)) * 8 + (t & 7);
  image[word] = h;
  if (split) image[NT * 8 + word] = l;
}

#if defined(LLMHOST_WGMMA_DEVICE)
// The mbarriers of the ring, and the bulk copies that complete on them.
__device__ __forceinline__ void BarInit(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ bool BarTryWait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
// Until the phase of parity `parity` has completed.
__device__ __forceinline__ void BarWait(uint32_t bar, uint32_t parity) {
  while (!BarTryWait(bar, parity)) {
  }
}
__device__ __forceinline__ void BarArriveExpect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// This block's shared address `addr` in cluster block `rank`'s shared memory.
__device__ __forceinline__ uint32_t ClusterAddress(uint32_t addr, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
  return remote;
}
// An arrival, where `pred`, on the mbarrier at `bar` in the shared memory of
// cluster block `rank`. The default (.release.cta) semantics, as a ring's
// consumer release needs: its reads of the stage are done (registers loaded,
// MMAs waited for). `.release.cluster` made every arrival a memory barrier,
// 38% of the warps' stall cycles at 128 tokens on an H100.
__device__ __forceinline__ void BarArriveAtIf(uint32_t bar, uint32_t rank, bool pred) {
  const uint32_t remote = ClusterAddress(bar, rank);
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %1, 0;\n@p mbarrier.arrive.shared::cluster.b64 _, [%0];\n}\n" ::"r"(remote),
      "r"(static_cast<int>(pred))
      : "memory");
}
__device__ __forceinline__ void BulkCopy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// A box of a 2-D tensor map (`map`: a kernel parameter's address) at
// coordinates (c0 innermost, c1) into shared memory, completing on `bar`.
__device__ __forceinline__ void TensorCopy2D(uint32_t dst, const void* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same bytes into the same place of every block in `mask` (bits: cluster
// ranks), completing on each one's mbarrier at `bar`.
__device__ __forceinline__ void BulkCopyMulticast(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar,
                                                  uint16_t mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], "
      "%4;\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "h"(mask)
      : "memory");
}
// The f32 at `addr` in the shared memory of cluster block `rank`.
__device__ __forceinline__ float SharedClusterLoad(uint32_t addr, uint32_t rank) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(ClusterAddress(addr, rank)) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ClusterRank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Every thread of every block of the cluster (a lone block: its own).
__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// D += A · B, m64nNk16, A (4 registers: mma.sync's A fragment) from registers, B by descriptor.
__device__ __forceinline__ void WgmmaN32(float (&d)[16], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
      "{%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void WgmmaN64(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "{%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

__device__ __forceinline__ void WgmmaN128(float (&d)[64], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "{%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

__device__ __forceinline__ void WgmmaN8(float (&d)[4], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void WgmmaN16(float (&d)[8], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

template <int NT>
__device__ __forceinline__ void Wgmma(float (&d)[NT / 2], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (NT == 8) {
    WgmmaN8(d, a, b);
  } else if constexpr (NT == 16) {
    WgmmaN16(d, a, b);
  } else if constexpr (NT == 32) {
    WgmmaN32(d, a, b);
  } else if constexpr (NT == 64) {
    WgmmaN64(d, a, b);
  } else {
    WgmmaN128(d, a, b);
  }
}
#endif

// grid (ceil(n / NT), row blocks rounded up to the cluster), clusters of
// (1, C, 1). Consumer warp w (warpgroup w / 4) takes rows [16 w, +16) of the
// block's, lane (g, c) the GEMVs' fragment of them; the last warp produces.
// Stage st's `full` mbarrier completes when its rows and all of x's image
// (every cluster block's slice) have landed; its `empty` one when each
// consumer warp of the C blocks has released it (C 4 WGS arrivals).
// The weights' tensor maps (kernel parameters: CUtensorMap must not be copied
// on the device), boxes of 64 columns by the block's rows.
struct WgMaps {
  CUtensorMap m[kMaxWeights];
};

// C: the parts a block walks side by side (1, 2 or 4; 1 with part groups):
// the k-th steps of C consecutive parts one after the other, each part's
// MMAs into its own sums, so that a row's copies are C x 128 contiguous
// bytes at a time rather than 128 bytes 1 KB apart.
template <int WGS, int NT, bool Split, bool Overlap, int C>
__global__ void __launch_bounds__(WgLayout<WGS, NT, Split>::kThreads, 1)
    WgmmaGemmKernel(MmaWeights ws, const __grid_constant__ WgMaps maps, const uint16_t* image, int64_t n, int cluster,
                    int stages, int groups) {
#if defined(LLMHOST_WGMMA_DEVICE)
  using L = WgLayout<WGS, NT, Split>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  // The swizzled tiles' 1024-byte alignment (the same offset in every block
  // of a cluster, so that multicast copies land alike).
  const uint32_t base = (SharedAddress(smem_raw) + 1023u) & ~1023u;
  unsigned char* const smem = smem_raw + (base - SharedAddress(smem_raw));
  const uint32_t bars = base + stages * L::kStageBytes;  // full[kMaxStages], then empty[kMaxStages]
  const uint32_t sums = bars + 2 * L::kMaxStages * 8;     // groups > 1: [own part][e][consumer thread]
  // groups > 1: where own part j (of `mine`) keeps its sums, [e][consumer thread].
  auto part_sums = [&](int j, int mine) { return j == mine - 1 ? base : sums + j * L::kPartBytes; };
  auto full = [&](int st) { return bars + 8 * st; };
  auto empty = [&](int st) { return bars + 8 * (L::kMaxStages + st); };
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) {
    for (int st = 0; st < stages; ++st) {
      BarInit(full(st), 1);
      BarInit(empty(st), cluster * 4 * WGS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  WaitForPriorGrid();  // x's image is the kernel before's
  ClusterSync();       // every block's mbarriers exist before any copy or arrival reaches them

  const int i = WeightOf(ws, blockIdx.y);
  const DevWeight& w = ws.w[i];
  const int64_t rb = (blockIdx.y - ws.first[i]) * L::kRowsBlock, t0 = int64_t{blockIdx.x} * NT;
  const int steps = static_cast<int>(w.cols / kStepCols);
  // Parts [first, last) are this block's: all of them, or 8 / groups of them
  // where the blocks of a (1, 1, groups) cluster share the walk.
  const int mine = kParts / groups, first = static_cast<int>(blockIdx.z) * mine, last = first + mine;
  const int per = steps / kParts, longer = steps % kParts;

  if (warp == 4 * WGS) {  // the producer
    if (lane == 0) {
      const bool rows = rb < w.rows;  // blocks past the last weight's (filling a cluster) copy x alone
      const uint32_t rank = cluster > 1 ? ClusterRank() : 0, slice = L::kXBytes / cluster;
      const char* tile = reinterpret_cast<const char*>(image) + int64_t{blockIdx.x} * steps * L::kXBytes;
      int st = 0, round = 0;
      auto issue = [&](int s) {
        BarWait(empty(st), (round & 1) ^ 1);  // the first round's wait passes at once
        // A box past the weight's last row is zero-filled and counted whole.
        BarArriveExpect(full(st), (rows ? L::kWBytes : 0) + L::kXBytes);
        const uint32_t stage = base + st * L::kStageBytes;
        if (rows) TensorCopy2D(stage, &maps.m[i], s * kStepCols, static_cast<int>(rb), full(st));
        const uint32_t dst = stage + L::kWBytes + rank * slice;
        const char* src = tile + int64_t{s} * L::kXBytes + rank * slice;
        if (cluster > 1) {
          BulkCopyMulticast(dst, src, slice, full(st), static_cast<uint16_t>((1u << cluster) - 1));
        } else {
          BulkCopy(dst, src, slice, full(st));
        }
        if (++st == stages) st = 0, ++round;
      };
      // The consumers' order: C parts at a time, the k-th step of each in
      // part order (a part's length is per or per + 1, the longer ones first).
      const int cw = groups > 1 ? 1 : C;
      for (int p0 = first; p0 < last; p0 += cw) {
        const int len0 = per + (p0 < longer ? 1 : 0);
        for (int k = 0; k < len0; ++k) {
          for (int j = 0; j < cw && p0 + j < last; ++j) {
            if (k < per + (p0 + j < longer ? 1 : 0)) issue(p0 + j + k * kParts);
          }
        }
      }
    }
  } else {  // the consumers
    const int g = lane >> 2, c = lane & 3;
    const int ra = 16 * warp + g;  // the lane's first row in the block
    float tot[L::kAcc];
    int st = 0, round = 0;
    int held = -1;  // the stage whose MMAs may still run (Overlap)
    // Lane 0 of each warp releases a stage: to every block of an x-multicast
    // cluster, else to its own block (in a cluster of part groups rank 0 is
    // another block). Predicated, not branched: a divergent branch while MMAs
    // are in flight makes ptxas serialize them.
    const uint32_t first_rank = cluster > 1 ? 0 : ClusterRank();
    auto release = [&](int stage, bool valid) {
      for (int r = 0; r < cluster; ++r) {
        BarArriveAtIf(empty(stage < 0 ? 0 : stage), first_rank + static_cast<uint32_t>(r), valid && lane == 0);
      }
    };
    uint32_t a[2][2][2][4];  // [buffer][ch][half]: MmaChunk's A operands
    // One step from A buffer `buf`. With Overlap its MMAs run on while the
    // next step's fragments load into the other buffer (wait_group 1 frees
    // the step before's stage and buffer); else they are waited for here.
    auto step = [&](auto buf_c, float (&acc)[L::kAcc]) {
      constexpr int buf = Overlap ? decltype(buf_c)::value : 0;  // one buffer where each step waits for its MMAs
      BarWait(full(st), round & 1);
      const unsigned char* wst = smem + st * L::kStageBytes;
      const uint32_t xst = base + st * L::kStageBytes + L::kWBytes;
#pragma unroll
      for (int ch = 0; ch < 2; ++ch) {
        const int q = ChunkOf(c, ch);  // rows ra and ra + 8 share ra % 8: the same swizzled chunk
        const int at = (q ^ (ra & 7)) * 16;
        const uint4 wa = *reinterpret_cast<const uint4*>(wst + ra * L::kRowStride + at);
        const uint4 wb = *reinterpret_cast<const uint4*>(wst + (ra + 8) * L::kRowStride + at);
        a[buf][ch][0][0] = wa.x, a[buf][ch][0][1] = wb.x, a[buf][ch][0][2] = wa.y, a[buf][ch][0][3] = wb.y;
        a[buf][ch][1][0] = wa.z, a[buf][ch][1][1] = wb.z, a[buf][ch][1][2] = wa.w, a[buf][ch][1][3] = wb.w;
      }
      WgFence();
#pragma unroll
      for (int grp = 0; grp < 4; ++grp) {
#pragma unroll
        for (int term = 0; term < L::kTerms; ++term) {
          // group grp's core matrices: 8-token groups 256 bytes apart, slot halves 128
          const uint32_t b = xst + term * NT * 128 + grp * (NT / 8) * 256;
          Wgmma<NT>(acc, a[buf][grp >> 1][grp & 1], WgDesc(b, 128, 256));
        }
      }
      WgCommit();
      if constexpr (Overlap) {
        WgWait<1>();
        release(held, held >= 0);
        held = st;
      } else {
        WgWait<0>();
        release(st, true);
      }
      if (++st == stages) st = 0, ++round;
    };
    if constexpr (C > 1) {
      // C parts side by side (groups == 1: the launch sees to it): step k of
      // parts p0 .. p0 + C - 1 in part order, A buffers alternating (C even;
      // a part without a k-th step is always among the last of its C, so the
      // alternation holds until the group's drain). Then the C sums join the
      // total in part order (v = p0, v += p1, ...).
      float pacc[C][L::kAcc];
      for (int p0 = 0; p0 < kParts; p0 += C) {
#pragma unroll
        for (int j = 0; j < C; ++j) {
#pragma unroll
          for (int e = 0; e < L::kAcc; ++e) pacc[j][e] = 0.0f;
        }
        const int len0 = per + (p0 < longer ? 1 : 0);
        for (int k = 0; k < len0; ++k) {
          [&]<int... J>(std::integer_sequence<int, J...>) {
            ((k < per + (p0 + J < longer ? 1 : 0) ? step(std::integral_constant<int, J & 1>{}, pacc[J]) : void()), ...);
          }(std::make_integer_sequence<int, C>{});
        }
        if constexpr (Overlap) {
          WgWait<0>();
          release(held, held >= 0);
          held = -1;
        }
#pragma unroll
        for (int j = 0; j < C; ++j) {
#pragma unroll
          for (int e = 0; e < L::kAcc; ++e) asm volatile("" : "+f"(pacc[j][e])::"memory");
        }
#pragma unroll
        for (int j = 0; j < C; ++j) {
#pragma unroll
          for (int e = 0; e < L::kAcc; ++e) tot[e] = p0 + j == 0 ? pacc[j][e] : tot[e] + pacc[j][e];
        }
      }
    } else {
      float acc[L::kAcc];
#pragma unroll
      for (int e = 0; e < L::kAcc; ++e) acc[e] = 0.0f;
      // Part by part (steps p, p + 8, ... as Walk deals them), two steps a turn
      // so that each names its A buffer at compile time; each part's MMAs are
      // waited for before the total takes them (v = p0, v += p1, ...).
      for (int part = first; part < last; ++part) {
        const int len = per + (part < longer ? 1 : 0);
        for (int k = 0; k < len; k += 2) {
          step(std::integral_constant<int, 0>{}, acc);
          if (k + 1 < len) step(std::integral_constant<int, 1>{}, acc);
        }
        if constexpr (Overlap) {
          WgWait<0>();
          release(held, held >= 0);
          held = -1;
        }
        // The sums are read only after the wait above: an empty volatile asm
        // naming each register keeps the compiler from reading them earlier.
#pragma unroll
        for (int e = 0; e < L::kAcc; ++e) asm volatile("" : "+f"(acc[e])::"memory");
        // The last part's sums go into the ring once both warpgroups have read
        // their last stage (the producer's copies all landed before that).
        if (groups > 1 && part == last - 1) asm volatile("bar.sync 1, %0;\n" ::"n"(L::kConsumers) : "memory");
        const uint32_t own = groups > 1 ? part_sums(part - first, mine) : 0;
#pragma unroll
        for (int e = 0; e < L::kAcc; ++e) {
          if (groups == 1) {
            tot[e] = part == 0 ? acc[e] : tot[e] + acc[e];
          } else {  // consecutive threads' sums side by side
            asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(own + 4 * (e * L::kConsumers + tid)), "f"(acc[e]) : "memory");
          }
          acc[e] = 0.0f;
        }
      }
    }
    // d[4 j + e]: row g (e < 2) or g + 8, token 8 j + 2c + (e & 1).
    if (groups == 1) {
      float* y = ws.y[i];
#pragma unroll
      for (int e = 0; e < L::kAcc; ++e) {
        const int64_t row = rb + ra + ((e & 2) ? 8 : 0), tok = t0 + 8 * (e >> 2) + 2 * c + (e & 1);
        if (tok < n && row < w.rows) y[tok * w.rows + row] = tot[e];
      }
    }
  }
  if (groups > 1) {
    // Every part's sums are in the cluster's shared memory: block z adds up
    // its 1/groups of the tile's sums, each in part order (v = p0, v += p1,
    // ...), reading each part where it is. Element q: consumer thread
    // q % kConsumers's sum e = q / kConsumers.
    ClusterSync();
    constexpr int kElems = L::kAcc * L::kConsumers;
    const int per_block = kElems / groups, z = static_cast<int>(blockIdx.z);
    float* y = ws.y[i];
    for (int q = z * per_block + tid; q < (z + 1) * per_block; q += L::kThreads) {
      const int t = q % L::kConsumers, e = q / L::kConsumers;
      float v = 0.0f;
      for (int part = 0; part < kParts; ++part) {
        const float s = SharedClusterLoad(part_sums(part % mine, mine) + 4 * (e * L::kConsumers + t), part / mine);
        v = part == 0 ? s : v + s;
      }
      const int g = (t & 31) >> 2, c = t & 3;
      const int64_t row = rb + 16 * (t >> 5) + g + ((e & 2) ? 8 : 0), tok = t0 + 8 * (e >> 2) + 2 * c + (e & 1);
      if (tok < n && row < w.rows) y[tok * w.rows + row] = v;
    }
  }
  ClusterSync();  // no block leaves while another may still arrive on its mbarriers or read its sums
#else
  __trap();  // built without sm_90a: WgmmaTakes declines
#endif
}

}  // namespace

namespace {

// On by default (LLMHOST_CUDA_WGMMA=off: the wide kernel; read at each launch).
bool WgmmaEnabled() {
  return EnvSwitch("LLMHOST_CUDA_WGMMA", true);
}

// The fewest tokens the GEMM takes (LLMHOST_CUDA_WGMMA_FROM, at least 1).
// 40 by default, between the batches measured on an H100 against the wide
// kernel (docs/benchmarks.md): 3,288 against 3,727 tok/s at 32 sequences,
// 4,595 against 3,529 at 48, 6,048 against 4,572 at 64.
int64_t WgmmaFrom() {
  const char* v = std::getenv("LLMHOST_CUDA_WGMMA_FROM");
  const long long f = v == nullptr ? 40 : std::atoll(v);
  return f < 1 ? 1 : f;
}

enum class WgTile { k128x128, k128x64, k64x128, k64x64, k128x32, k64x32, k128x16, k64x16, k128x8, k64x8 };

int TileTokens(WgTile tile) {
  switch (tile) {
    case WgTile::k128x128:
    case WgTile::k64x128: return 128;
    case WgTile::k128x64:
    case WgTile::k64x64: return 64;
    case WgTile::k128x32:
    case WgTile::k64x32: return 32;
    case WgTile::k128x16:
    case WgTile::k64x16: return 16;
    case WgTile::k128x8:
    case WgTile::k64x8: return 8;
  }
  return 128;
}

int TileRows(WgTile tile) {
  switch (tile) {
    case WgTile::k128x128:
    case WgTile::k128x64:
    case WgTile::k128x32:
    case WgTile::k128x16:
    case WgTile::k128x8: return 128;
    default: return 64;
  }
}

// A block's shared memory: WgLayout::Bytes of the tile's kernel.
template <int WGS, int NT>
size_t LayoutBytes(bool split, int stages, int mine) {
  return split ? WgLayout<WGS, NT, true>::Bytes(stages, mine) : WgLayout<WGS, NT, false>::Bytes(stages, mine);
}
size_t TileBytes(WgTile tile, bool split, int stages, int mine) {
  switch (tile) {
    case WgTile::k128x128: return LayoutBytes<2, 128>(split, stages, mine);
    case WgTile::k128x64: return LayoutBytes<2, 64>(split, stages, mine);
    case WgTile::k64x128: return LayoutBytes<1, 128>(split, stages, mine);
    case WgTile::k64x64: return LayoutBytes<1, 64>(split, stages, mine);
    case WgTile::k128x32: return LayoutBytes<2, 32>(split, stages, mine);
    case WgTile::k64x32: return LayoutBytes<1, 32>(split, stages, mine);
    case WgTile::k128x16: return LayoutBytes<2, 16>(split, stages, mine);
    case WgTile::k64x16: return LayoutBytes<1, 16>(split, stages, mine);
    case WgTile::k128x8: return LayoutBytes<2, 8>(split, stages, mine);
    case WgTile::k64x8: return LayoutBytes<1, 8>(split, stages, mine);
  }
  return 0;
}

// How many blocks share a tile's walk, each taking 8 / G of its parts and
// the cluster adding them up in part order (LLMHOST_CUDA_WGMMA_PARTS):
// 1 | 2 | 4 | 8; `auto`: the tile chosen as without groups, then the fewest
// groups that make 2 kMinBlocks blocks; `big`: the largest tile that some
// number of groups brings to kMinBlocks blocks, with the fewest that do
// (`big2`: 2 kMinBlocks). 1 by default, as measured so far.
struct PartsRule {
  int fixed = 1;            // where want_blocks is 0
  int64_t want_blocks = 0;  // else the fewest groups that make this many blocks
  bool tile_aware = false;  // the tile chosen with the groups in view
};
PartsRule WgPartsRule() {
  const char* v = std::getenv("LLMHOST_CUDA_WGMMA_PARTS");
  PartsRule r;
  if (v == nullptr) return r;
  if (std::strcmp(v, "auto") == 0) {
    r.want_blocks = 2 * kMinBlocks;
  } else if (std::strcmp(v, "big") == 0 || std::strcmp(v, "big2") == 0) {
    r.want_blocks = v[3] == '2' ? 2 * kMinBlocks : kMinBlocks;
    r.tile_aware = true;
  } else {
    r.fixed = std::atoi(v);
  }
  return r;
}

// The groups for a launch of `blocks` blocks; `fits(g)`: whether a block's
// sums of 8 / g parts fit beside a ring of 2 stages (else more groups, or none).
template <typename Fits>
int WgGroups(const PartsRule& rule, int64_t blocks, Fits fits) {
  int g = rule.fixed;
  if (rule.want_blocks > 0) {
    g = 1;
    while (g < kParts && (blocks * g < rule.want_blocks || !fits(g))) g *= 2;
  }
  return (g == 2 || g == 4 || g == 8) && fits(g) ? g : 1;
}

// Up to 8, 16 or 32 tokens, that many a tile (128 rows where that makes
// kMinBlocks blocks); past that the largest tile (rows x tokens) that still
// makes kMinBlocks blocks, else 64 x 64. With a tile-aware parts rule the
// largest tile whose blocks some number of groups brings to the rule's
// count. LLMHOST_CUDA_WGMMA_TILE forces one (tests, A/Bs).
WgTile ChooseWgTile(const DevWeight* w, int count, int64_t n, bool split) {
  const char* v = std::getenv("LLMHOST_CUDA_WGMMA_TILE");
  if (v != nullptr) {
    if (std::strcmp(v, "128x128") == 0) return WgTile::k128x128;
    if (std::strcmp(v, "128x64") == 0) return WgTile::k128x64;
    if (std::strcmp(v, "64x128") == 0) return WgTile::k64x128;
    if (std::strcmp(v, "64x64") == 0) return WgTile::k64x64;
    if (std::strcmp(v, "128x32") == 0) return WgTile::k128x32;
    if (std::strcmp(v, "64x32") == 0) return WgTile::k64x32;
    if (std::strcmp(v, "128x16") == 0) return WgTile::k128x16;
    if (std::strcmp(v, "64x16") == 0) return WgTile::k64x16;
    if (std::strcmp(v, "128x8") == 0) return WgTile::k128x8;
    if (std::strcmp(v, "64x8") == 0) return WgTile::k64x8;
  }
  auto blocks = [&](int64_t rows_block, int64_t tokens) {
    int64_t b = 0;
    for (int k = 0; k < count; ++k) b += (w[k].rows + rows_block - 1) / rows_block;
    return b * ((n + tokens - 1) / tokens);
  };
  const PartsRule rule = WgPartsRule();
  if (rule.tile_aware) {
    using T = WgTile;
    static constexpr WgTile k8[] = {T::k128x8, T::k64x8}, k16[] = {T::k128x16, T::k64x16},
                            k32[] = {T::k128x32, T::k64x32}, k64[] = {T::k128x64, T::k64x64},
                            kMore[] = {T::k128x128, T::k128x64, T::k64x128, T::k64x64};
    const WgTile* first = n <= 8 ? k8 : n <= 16 ? k16 : n <= 32 ? k32 : n <= 64 ? k64 : kMore;
    const int count_tiles = n <= 64 ? 2 : 4;
    const auto most = static_cast<size_t>(MaxSharedPerBlock());
    for (int k = 0; k < count_tiles; ++k) {
      const WgTile t = first[k];
      int g = kParts;  // the most groups whose sums fit
      while (g > 1 && TileBytes(t, split, 2, kParts / g) > most) g /= 2;
      if (blocks(TileRows(t), TileTokens(t)) * g >= rule.want_blocks) return t;
    }
    return first[count_tiles - 1];
  }
  if (n <= 8) return blocks(128, 8) >= kMinBlocks ? WgTile::k128x8 : WgTile::k64x8;
  if (n <= 16) return blocks(128, 16) >= kMinBlocks ? WgTile::k128x16 : WgTile::k64x16;
  if (n <= 32) return blocks(128, 32) >= kMinBlocks ? WgTile::k128x32 : WgTile::k64x32;
  if (blocks(128, 128) >= kMinBlocks) return WgTile::k128x128;
  if (blocks(128, 64) >= kMinBlocks) return WgTile::k128x64;
  if (blocks(64, 128) >= kMinBlocks) return WgTile::k64x128;
  return WgTile::k64x64;
}

// Blocks a cluster: each copies 1/C of x's stage for all C
// (LLMHOST_CUDA_WGMMA_CLUSTER=1|2|4|8). 1 by default: with tensor-map
// loads, clusters of 2 and 4 ran at 72% and 47% of no cluster's speed at 128
// sequences on an H100 (their blocks wait for one another's stages).
int WgCluster() {
  const char* v = std::getenv("LLMHOST_CUDA_WGMMA_CLUSTER");
  const int c = v == nullptr ? 1 : std::atoi(v);
  return c == 2 || c == 4 || c == 8 ? c : 1;
}

// A lone warpgroup's MMAs of a step run on while it loads the next step's
// fragments (LLMHOST_CUDA_WGMMA_OVERLAP=off: it waits for them each step).
bool WgOverlap() {
  return EnvSwitch("LLMHOST_CUDA_WGMMA_OVERLAP", true);
}

// Stages of a block's ring (LLMHOST_CUDA_WGMMA_STAGES, 2-8, fewer where the
// block's shared memory holds fewer). 4 by default, as measured so far.
int WgStages(int most) {
  const char* v = std::getenv("LLMHOST_CUDA_WGMMA_STAGES");
  const int want = v == nullptr ? 4 : std::atoi(v);
  return want < 2 ? 2 : want > most ? most : want;
}

// `want`, or a smaller cluster where the GPU cannot hold one of `want`
// blocks of this kernel at once (shared memory taken by another process, a
// MIG slice): asked of the driver once per kernel and size (`fits`: the
// kernel's answers by size, 0 unknown, 1 no, 2 yes; the process's first GPU
// answers for all), so a launch never fails for it.
template <typename Kernel>
int ClusterFits(Kernel kernel, int threads, size_t bytes, int want, bool along_z, std::atomic<int> (&fits)[9]) {
  for (int c = want; c > 1; c /= 2) {
    int v = fits[c].load(std::memory_order_relaxed);
    if (v == 0) {
      const unsigned y = along_z ? 1 : static_cast<unsigned>(c), z = along_z ? static_cast<unsigned>(c) : 1;
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(1, y, z);
      cfg.blockDim = dim3(static_cast<unsigned>(threads));
      cfg.dynamicSmemBytes = bytes;
      cudaLaunchAttribute attr;
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = 1;
      attr.val.clusterDim.y = y;
      attr.val.clusterDim.z = z;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      int clusters = 0;
      const cudaError_t rc = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg);
      if (rc != cudaSuccess) {  // no answer (not a failed launch): a smaller cluster this time, asked again next
        (void)cudaGetLastError();
        continue;
      }
      v = clusters > 0 ? 2 : 1;
      fits[c].store(v, std::memory_order_relaxed);
    }
    if (v == 2) return c;
  }
  return 1;
}

// x's images: every token tile's, padded to whole tiles (SplitSlotsKernel).
int64_t ImageBytes(WgTile tile, int64_t n, int64_t cols, bool split) {
  const int nt = TileTokens(tile);
  return (n + nt - 1) / nt * nt * cols * 2 * (split ? 2 : 1);
}

using EncodeTiledFn = decltype(&cuTensorMapEncodeTiled);

// The driver's tensor-map encoder, looked up once (null: the driver has none).
EncodeTiledFn TensorMapEncoder() {
  static const EncodeTiledFn f = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    const bool ok = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
                        cudaSuccess &&
                    q == cudaDriverEntryPointSuccess;
    return ok ? reinterpret_cast<EncodeTiledFn>(p) : nullptr;
  }();
  return f;
}

// Weight w's tensor map for boxes of one step's 64 columns by `box_rows`
// rows, 128-byte swizzled, rows past the last zero-filled. A map holds only
// the address, sizes and box, so one encoded for the same values serves any
// weight that has them: they are encoded once (graph replays do not launch
// from the host at all).
bool WeightMap(const DevWeight& w, int box_rows, CUtensorMap* out) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int64_t, int64_t, int64_t, int>, CUtensorMap> maps;
  const auto key = std::make_tuple(w.data, w.rows, w.cols, w.row_bytes, box_rows);
  std::lock_guard<std::mutex> lock(mu);
  if (const auto it = maps.find(key); it != maps.end()) {
    *out = it->second;
    return true;
  }
  const EncodeTiledFn encode = TensorMapEncoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(w.cols), static_cast<cuuint64_t>(w.rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(w.row_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kStepCols), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  CUtensorMap m;
  if (encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(w.data), dims, strides, box, elem,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    return false;
  }
  maps.emplace(key, m);
  *out = m;
  return true;
}

// log2 of 1, 2, 4 or 8: a count's index into the launch's cached answers.
constexpr int Log2(int v) { return v >= 8 ? 3 : v >= 4 ? 2 : v >= 2 ? 1 : 0; }

// Parts a block walks side by side (LLMHOST_CUDA_WGMMA_CONCURRENT=1|2|4), at
// most what a tile's registers hold without spills or serialized MMAs (64
// rows: 2 at 128 tokens, 4 at 32-64; 128 rows: half that; none below 32
// tokens). 2 by default: 2-4% faster than 1 at 64-128 tokens on an H100,
// 4 slower at 128 (255 registers).
template <int WGS, int NT>
constexpr int kMostConcurrent = NT < 32 ? 1 : (NT >= 128 ? 2 : 4) / WGS;
template <int WGS, int NT>
int ConcurrentParts() {
  const char* v = std::getenv("LLMHOST_CUDA_WGMMA_CONCURRENT");
  const int want = v == nullptr ? 2 : std::atoi(v);
  const int most = kMostConcurrent<WGS, NT>;
  int c = 1;
  while (c * 2 <= want && c * 2 <= most) c *= 2;
  return c;
}
template <int WGS, int NT, bool Split, bool Overlap>
auto ConcurrentKernel(int c) -> decltype(&WgmmaGemmKernel<WGS, NT, Split, Overlap, 1>) {
  if constexpr (kMostConcurrent<WGS, NT> >= 4) {
    if (c >= 4) return WgmmaGemmKernel<WGS, NT, Split, Overlap, 4>;
  }
  if constexpr (kMostConcurrent<WGS, NT> >= 2) {
    if (c >= 2) return WgmmaGemmKernel<WGS, NT, Split, Overlap, 2>;
  }
  return WgmmaGemmKernel<WGS, NT, Split, Overlap, 1>;
}

template <int WGS, int NT, bool Split>
bool LaunchWgShape(MmaWeights ws, int64_t n, const float* x, uint16_t* image, cudaStream_t s) {
  using L = WgLayout<WGS, NT, Split>;
  WgMaps maps;
  for (int k = 0; k < ws.count; ++k) {
    if (!WeightMap(ws.w[k], L::kRowsBlock, &maps.m[k])) return false;
  }
  const int64_t cols = ws.w[0].cols, steps = cols / kStepCols, tiles = (n + NT - 1) / NT;
  const int64_t halves = tiles * NT * steps * 8;
  constexpr int kSplitThreads = 256;
  LaunchPdl(SplitSlotsKernel<NT>, dim3(static_cast<unsigned>((halves + kSplitThreads - 1) / kSplitThreads)),
            dim3(kSplitThreads), 0, s, x, n, steps, halves, reinterpret_cast<uint4*>(image), Split);
  // Overlap where one warpgroup is a block's only one (two overlap each
  // other) and x has two terms (ptxas serializes the one-term form's MMAs;
  // at 2 x 128 it spills).
  constexpr bool kOverlap = WGS == 1 && Split;
  const bool overlap = kOverlap && WgOverlap();
  auto kernel = overlap ? WgmmaGemmKernel<WGS, NT, Split, kOverlap, 1> : WgmmaGemmKernel<WGS, NT, Split, false, 1>;
  ws.first[0] = 0;
  for (int k = 0; k < ws.count; ++k) {
    ws.first[k + 1] = ws.first[k] + (ws.w[k].rows + L::kRowsBlock - 1) / L::kRowsBlock;
  }
  // Blocks along the rows share x's copies (cluster), or along z a tile's
  // parts (groups); not both.
  const int most = MaxSharedPerBlock();
  // The most a block may ask, set once: a launch asks for what its stages and
  // groups take, and a limit lowered for a smaller launch could refuse a
  // recorded graph's larger one.
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most);
  auto stages_for = [&](int groups) { return WgStages(L::StagesIn(static_cast<size_t>(most), kParts / groups)); };
  // This shape's kernels', [overlap][concurrent parts log2][stages][groups log2][cluster].
  static std::atomic<int> fits[2][3][L::kMaxStages + 1][4][9];
  auto& fits_of = fits[overlap][0];
  auto sums_fit = [&](int g) { return L::Bytes(2, kParts / g) <= static_cast<size_t>(most); };
  // Where a cluster of that many does not fit at once (another process's
  // shared memory, a MIG slice): the most that do, or none.
  int groups = 1;
  for (int g = WgGroups(WgPartsRule(), ws.first[ws.count] * tiles, sums_fit); g > 1 && groups == 1; g /= 2) {
    const int st = stages_for(g);
    if (sums_fit(g) && ClusterFits(kernel, L::kThreads, L::Bytes(st, kParts / g), g, true, fits_of[st][Log2(g)]) == g) {
      groups = g;
    }
  }
  const int stages = stages_for(groups);
  const size_t bytes = L::Bytes(stages, kParts / groups);
  // Parts side by side where a block walks them all.
  const int conc = groups > 1 ? 1 : ConcurrentParts<WGS, NT>();
  if (conc > 1) {
    kernel = overlap ? ConcurrentKernel<WGS, NT, Split, kOverlap>(conc) : ConcurrentKernel<WGS, NT, Split, false>(conc);
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most);
  }
  const int cluster = groups > 1 ? 1
                                 : ClusterFits(kernel, L::kThreads, bytes, WgCluster(), false,
                                               fits[overlap][Log2(conc)][stages][0]);
  // Row blocks past the last weight's (to fill the last cluster) copy x's
  // slices and write nothing.
  const int64_t row_blocks = (ws.first[ws.count] + cluster - 1) / cluster * cluster;
  LaunchPdlCluster(kernel, dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(row_blocks), groups),
                   dim3(L::kThreads), bytes, dim3(1, cluster, groups), s, ws, maps, image, n, cluster, stages, groups);
  return true;
}

template <bool Split>
bool LaunchWgTile(WgTile tile, MmaWeights ws, int64_t n, const float* x, uint16_t* image, cudaStream_t s) {
  switch (tile) {
    case WgTile::k128x128: return LaunchWgShape<2, 128, Split>(ws, n, x, image, s);
    case WgTile::k128x64: return LaunchWgShape<2, 64, Split>(ws, n, x, image, s);
    case WgTile::k64x128: return LaunchWgShape<1, 128, Split>(ws, n, x, image, s);
    case WgTile::k64x64: return LaunchWgShape<1, 64, Split>(ws, n, x, image, s);
    case WgTile::k128x32: return LaunchWgShape<2, 32, Split>(ws, n, x, image, s);
    case WgTile::k64x32: return LaunchWgShape<1, 32, Split>(ws, n, x, image, s);
    case WgTile::k128x16: return LaunchWgShape<2, 16, Split>(ws, n, x, image, s);
    case WgTile::k64x16: return LaunchWgShape<1, 16, Split>(ws, n, x, image, s);
    case WgTile::k128x8: return LaunchWgShape<2, 8, Split>(ws, n, x, image, s);
    case WgTile::k64x8: return LaunchWgShape<1, 8, Split>(ws, n, x, image, s);
  }
  return false;
}

constexpr size_t kWgMaxBytes = WgLayout<2, 128, true>::Bytes(4);

}  // namespace

bool WgmmaTakes(const DevWeight* w, int count, int64_t n) {
  if (n < WgmmaFrom() || !WgmmaEnabled() || !Sm90aDevice() || static_cast<size_t>(MaxSharedPerBlock()) < kWgMaxBytes ||
      TensorMapEncoder() == nullptr) {
    return false;
  }
  for (int k = 0; k < count; ++k) {
    if (w[k].fmt != WFmt::kBF16 || w[k].cols != w[0].cols || w[k].cols % kStepCols != 0 ||
        w[k].cols / kStepCols < kParts || w[k].row_bytes % 16 != 0 || (reinterpret_cast<uintptr_t>(w[k].data) & 15u) != 0) {
      return false;
    }
  }
  return true;
}

int64_t WgmmaTermsBytes(const DevWeight* w, int count, int64_t n, bool split) {
  return WgmmaTakes(w, count, n) ? ImageBytes(ChooseWgTile(w, count, n, split), n, w[0].cols, split) : 0;
}

bool LaunchWgmmaGemm(MmaWeights ws, int64_t n, const float* x, uint16_t* terms, bool split, cudaStream_t s) {
  if (terms == nullptr || (reinterpret_cast<uintptr_t>(x) & 7u) != 0 ||
      (reinterpret_cast<uintptr_t>(terms) & 15u) != 0 || !WgmmaTakes(ws.w, ws.count, n)) {
    return false;
  }
  const WgTile tile = ChooseWgTile(ws.w, ws.count, n, split);
  // False only where the driver cannot encode a weight's tensor map, before anything was launched.
  return split ? LaunchWgTile<true>(tile, ws, n, x, terms, s) : LaunchWgTile<false>(tile, ws, n, x, terms, s);
}

}  // namespace llmhost::cuda::mma_rows

namespace llmhost::cuda {

// Hopper's sm_90a kernels run on compute capability 9.0 alone.
bool Sm90aDevice() {
#if defined(LLMHOST_WGMMA_BUILT)
  static std::atomic<int> cache[64];  // 0 unknown, 1 no, 2 yes
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return false;
  int v = cache[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    v = major == 9 && minor == 0 ? 2 : 1;
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v == 2;
#else
  return false;
#endif
}

}  // namespace llmhost::cuda
