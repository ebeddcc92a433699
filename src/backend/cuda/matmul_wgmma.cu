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
// A block: 1 or 2 warpgroups of 64 weight rows each, by 64 or 128 tokens;
// weights and both terms arrive through a ring of cp.async stages.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/common.cuh"
#include "backend/cuda/device_caps.h"
#include "backend/cuda/matmul_mma.cuh"
#include "backend/cuda/mma_rows.cuh"

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

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LLMHOST_WGMMA_DEVICE 1
#endif

// WGS warpgroups of 64 rows, NT tokens, Split: x as two bf16 terms.
template <int WGS, int NT, bool Split>
struct WgLayout {
  static constexpr int kThreads = 128 * WGS;
  static constexpr int kRowsBlock = 64 * WGS;
  static constexpr int kTerms = Split ? 2 : 1;
  static constexpr int kStages = 4;
  // A stage in 16-byte words: the rows' step ([row][chunk], chunk q at q ^
  // (row % 8)), then each term's tokens in wgmma's no-swizzle K-major layout:
  // [group q][8-token group][slot half][token % 8], a core matrix 128 bytes.
  static constexpr int kWWords = kRowsBlock * 8;
  static constexpr int kTermWords = NT * 8;
  static constexpr int kStageWords = kWWords + kTerms * kTermWords;
  static constexpr size_t kBytes = static_cast<size_t>(kStages) * kStageWords * 16;
  static constexpr int kAcc = NT / 2;  // an m64nNk16's f32 sums a thread
  static_assert(kBytes <= 227 * 1024, "a block's shared memory");
  static_assert(kWWords % kThreads == 0 && kTermWords % kThreads == 0, "whole copies a thread");
};

// x's terms in slot order: for token t, step s, the 64 columns as groups 0-3
// of 16 slots (SlotCol), hi into `hi` and (Split) lo into `lo`, each
// [token][step][64]; one thread writes one 8-slot half (16 bytes) a term.
__global__ void SplitSlotsKernel(const float* x, int64_t halves, uint4* hi, uint4* lo) {
  WaitForPriorGrid();
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= halves) return;
  const int k8 = static_cast<int>(i & 7);  // group k8 / 2, slots 8 (k8 % 2) ..
  const float* step = x + (i >> 3) * 64;
  float v[8];
#pragma unroll
  for (int j = 0; j < 8; j += 2) {
    const float2 p = __ldg(reinterpret_cast<const float2*>(step + SlotCol(k8 >> 1, 8 * (k8 & 1) + j)));
    v[j] = p.x, v[j + 1] = p.y;
  }
  uint4 h, l;
  if (lo != nullptr) {
    SplitPair(v[0], v[1], &h.x, &l.x);
    SplitPair(v[2], v[3], &h.y, &l.y);
    SplitPair(v[4], v[5], &h.z, &l.z);
    SplitPair(v[6], v[7], &h.w, &l.w);
    lo[i] = l;
  } else {
    h = make_uint4(PackBf16(v[0], v[1]), PackBf16(v[2], v[3]), PackBf16(v[4], v[5]), PackBf16(v[6], v[7]));
  }
  hi[i] = h;
}

// A no-swizzle K-major operand's descriptor: core matrices of 8 rows x 16
// bytes; `lbo` bytes between the two of a k16 (the slot halves), `sbo`
// between 8-row groups.
__device__ __forceinline__ uint64_t SmemDesc(const void* p, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((SharedAddress(p) & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
         (static_cast<uint64_t>(sbo >> 4) << 32);
}

#if defined(LLMHOST_WGMMA_DEVICE)
__device__ __forceinline__ void WgFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgWait() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
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

template <int NT>
__device__ __forceinline__ void Wgmma(float (&d)[NT / 2], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (NT == 64) {
    WgmmaN64(d, a, b);
  } else {
    WgmmaN128(d, a, b);
  }
}
#endif

// grid (ceil(n / NT), Σ row blocks). Warpgroup wg takes rows [64 wg, +64)
// of the block's; its warp w rows [16 w, +16) of those, lane (g, c) the
// GEMVs' fragment of them. Every thread copies (no producer warps): step
// j + Stages - 1 goes into the ring while step j is summed (each warpgroup
// waits for its MMAs at the end of a step, so step j - 1's stage is free).
template <int WGS, int NT, bool Split>
__global__ void __launch_bounds__(WgLayout<WGS, NT, Split>::kThreads, 1)
    WgmmaGemmKernel(MmaWeights ws, const uint16_t* xh, const uint16_t* xl, int64_t n, bool early) {
#if defined(LLMHOST_WGMMA_DEVICE)
  using L = WgLayout<WGS, NT, Split>;
  constexpr int kT = L::kThreads, kS = L::kStages;
  if (!early) WaitForPriorGrid();
  const int i = WeightOf(ws, blockIdx.y);
  const DevWeight& w = ws.w[i];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
  const int64_t rb = (blockIdx.y - ws.first[i]) * L::kRowsBlock, t0 = int64_t{blockIdx.x} * NT;
  const int64_t cols = w.cols;
  const int steps = static_cast<int>(cols / kStepCols);
  Walk prod(steps, 0, true), cons = prod;

  // Weight copies: piece q T + tid is row q T / 8 + tid / 8, chunk tid % 8
  // (T / 8 a multiple of 8: the same swizzle for every q).
  constexpr int kWCopies = L::kWWords / kT;
  const int line = tid >> 3, chunk = tid & 7;
  const int wdst0 = line * 8 + (chunk ^ (line & 7));
  const char* wsrc = static_cast<const char*>(w.data) + (rb + line) * w.row_bytes + chunk * 16;
  const int64_t wstride = int64_t{kT / 8} * w.row_bytes;
  const int64_t wleft = w.rows - rb - line;
  // Term copies: piece q T + tid is token 8 ((q T + tid) / 64 % (NT / 8)) +
  // tid % 8, 8-slot half k8 = tid / 8 % 8 of the step (eight threads write one
  // core matrix's 128 bytes; eight tokens' 16 bytes each are read).
  constexpr int kXCopies = L::kTermWords / kT;  // a term's
  const int tl = tid & 7, k8 = (tid >> 3) & 7;
  const int xdst0 = ((k8 >> 1) * (NT / 8) * 2 + (k8 & 1)) * 8 + tl;
  auto token_of = [&](int q) { return 8 * (((q * kT + tid) >> 6) % (NT / 8)) + tl; };

  extern __shared__ uint4 smem[];
  auto copy_w = [&](int stage, int s) {
    uint4* dst = smem + stage * L::kStageWords + wdst0;
#pragma unroll
    for (int q = 0; q < kWCopies; ++q) {
      const bool ok = q * (kT / 8) < wleft;
      CopyAsync16(dst + q * kT, ok ? wsrc + q * wstride + s * (kStepCols * 2) : w.data, ok);
    }
  };
  auto copy_x = [&](int stage, int s) {
#pragma unroll
    for (int term = 0; term < L::kTerms; ++term) {
      uint4* base = smem + stage * L::kStageWords + L::kWWords + term * L::kTermWords + xdst0;
      const uint16_t* src = term == 0 ? xh : xl;
#pragma unroll
      for (int q = 0; q < kXCopies; ++q) {
        const int t = token_of(q);
        const bool ok = t0 + t < n;
        // token group t / 8 of group k8 / 2: 16 words a token group
        CopyAsync16(base + (t >> 3) * 16, ok ? src + ((t0 + t) * steps + s) * kStepCols + k8 * 8 : xh, ok);
      }
    }
  };

  {
    Walk at = prod;
#pragma unroll
    for (int k = 0; k < kS - 1; ++k) {
      if (k < steps) copy_w(k, at.Step());
      at.Next();
    }
  }
  if (early) WaitForPriorGrid();
#pragma unroll
  for (int k = 0; k < kS - 1; ++k) {
    if (k < steps) copy_x(k, prod.Step());
    prod.Next();
    CopyAsyncCommit();
  }

  float acc[L::kAcc], tot[L::kAcc];
#pragma unroll
  for (int e = 0; e < L::kAcc; ++e) acc[e] = 0.0f;
  const int ra = 16 * warp + g;  // the lane's first row in the block (warps of every warpgroup in order)
  int stage = 0, next_stage = kS - 1;
  for (int j = 0; j < steps; ++j) {
    CopyAsyncWait<kS - 2>();  // this thread's copies of step j
    __syncthreads();          // everyone's; and step j - 1's stage is free (every warpgroup waited for its MMAs)
    if (j + kS - 1 < steps) {
      copy_w(next_stage, prod.Step());
      copy_x(next_stage, prod.Step());
      prod.Next();
    }
    CopyAsyncCommit();
    const uint4* wst = smem + stage * L::kStageWords;
    const uint4* xst = wst + L::kWWords;
    stage = stage + 1 == kS ? 0 : stage + 1;
    next_stage = next_stage + 1 == kS ? 0 : next_stage + 1;
    uint32_t a[2][2][4];  // [ch][half]: MmaChunk's A operands
#pragma unroll
    for (int ch = 0; ch < 2; ++ch) {
      const int q = ChunkOf(c, ch) ^ g;
      const uint4 wa = wst[ra * 8 + q], wb = wst[(ra + 8) * 8 + q];
      a[ch][0][0] = wa.x, a[ch][0][1] = wb.x, a[ch][0][2] = wa.y, a[ch][0][3] = wb.y;
      a[ch][1][0] = wa.z, a[ch][1][1] = wb.z, a[ch][1][2] = wa.w, a[ch][1][3] = wb.w;
    }
    WgFence();
#pragma unroll
    for (int grp = 0; grp < 4; ++grp) {
#pragma unroll
      for (int term = 0; term < L::kTerms; ++term) {
        const uint4* b = xst + term * L::kTermWords + grp * (NT / 8) * 16;
        Wgmma<NT>(acc, a[grp >> 1][grp & 1], SmemDesc(b, 128, 256));
      }
    }
    WgCommit();
    WgWait();
    if (cons.Last()) {  // the part is done: the total takes it (v = p0, v += p1, ...), the next starts from zero
      const bool first_part = cons.part == 0;
#pragma unroll
      for (int e = 0; e < L::kAcc; ++e) {
        tot[e] = first_part ? acc[e] : tot[e] + acc[e];
        acc[e] = 0.0f;
      }
    }
    cons.Next();
  }
  CopyAsyncWait<0>();
  // d[4 j + e]: row g (e < 2) or g + 8, token 8 j + 2c + (e & 1).
  float* y = ws.y[i];
#pragma unroll
  for (int e = 0; e < L::kAcc; ++e) {
    const int64_t row = rb + ra + ((e & 2) ? 8 : 0), tok = t0 + 8 * (e >> 2) + 2 * c + (e & 1);
    if (tok < n && row < w.rows) y[tok * w.rows + row] = tot[e];
  }
#else
  __trap();  // built without sm_90a: WgmmaTakes declines
#endif
}

}  // namespace

namespace {

// Opt-in (LLMHOST_CUDA_WGMMA=on) until it has run on a GPU; read at each launch.
constexpr bool kWgmmaByDefault = false;
bool WgmmaEnabled() {
  const char* v = std::getenv("LLMHOST_CUDA_WGMMA");
  if (v == nullptr) return kWgmmaByDefault;
  return std::strcmp(v, "on") == 0;
}

// The fewest tokens the GEMM takes (LLMHOST_CUDA_WGMMA_FROM, at least 9: up
// to 8 tokens have their own kernel).
int64_t WgmmaFrom() {
  const char* v = std::getenv("LLMHOST_CUDA_WGMMA_FROM");
  const long long f = v == nullptr ? 17 : std::atoll(v);
  return f < 9 ? 9 : f;
}

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

enum class WgTile { k128x128, k128x64, k64x128, k64x64 };

// The largest tile (rows x tokens) that still makes kMinBlocks blocks, else
// 64 x 64; LLMHOST_CUDA_WGMMA_TILE forces one (tests, A/Bs).
WgTile ChooseWgTile(const DevWeight* w, int count, int64_t n) {
  const char* v = std::getenv("LLMHOST_CUDA_WGMMA_TILE");
  if (v != nullptr) {
    if (std::strcmp(v, "128x128") == 0) return WgTile::k128x128;
    if (std::strcmp(v, "128x64") == 0) return WgTile::k128x64;
    if (std::strcmp(v, "64x128") == 0) return WgTile::k64x128;
    if (std::strcmp(v, "64x64") == 0) return WgTile::k64x64;
  }
  auto blocks = [&](int64_t rows_block, int64_t tokens) {
    int64_t b = 0;
    for (int k = 0; k < count; ++k) b += (w[k].rows + rows_block - 1) / rows_block;
    return b * ((n + tokens - 1) / tokens);
  };
  if (blocks(128, 128) >= kMinBlocks) return WgTile::k128x128;
  if (blocks(128, 64) >= kMinBlocks) return WgTile::k128x64;
  if (blocks(64, 128) >= kMinBlocks) return WgTile::k64x128;
  return WgTile::k64x64;
}

template <int WGS, int NT, bool Split>
void LaunchWgShape(MmaWeights ws, int64_t n, const uint16_t* xh, const uint16_t* xl, cudaStream_t s) {
  using L = WgLayout<WGS, NT, Split>;
  ws.first[0] = 0;
  for (int k = 0; k < ws.count; ++k) {
    ws.first[k + 1] = ws.first[k] + (ws.w[k].rows + L::kRowsBlock - 1) / L::kRowsBlock;
  }
  auto kernel = WgmmaGemmKernel<WGS, NT, Split>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L::kBytes));
  const dim3 grid(static_cast<unsigned>((n + NT - 1) / NT), static_cast<unsigned>(ws.first[ws.count]));
  LaunchPdl(kernel, grid, dim3(L::kThreads), L::kBytes, s, ws, xh, xl, n, EarlyWeightLoadsEnabled());
}

template <bool Split>
void LaunchWgTile(WgTile tile, MmaWeights ws, int64_t n, const uint16_t* xh, const uint16_t* xl, cudaStream_t s) {
  switch (tile) {
    case WgTile::k128x128: LaunchWgShape<2, 128, Split>(ws, n, xh, xl, s); break;
    case WgTile::k128x64: LaunchWgShape<2, 64, Split>(ws, n, xh, xl, s); break;
    case WgTile::k64x128: LaunchWgShape<1, 128, Split>(ws, n, xh, xl, s); break;
    case WgTile::k64x64: LaunchWgShape<1, 64, Split>(ws, n, xh, xl, s); break;
  }
}

constexpr size_t kWgMaxBytes = WgLayout<2, 128, true>::kBytes;

}  // namespace

bool WgmmaTakes(const DevWeight* w, int count, int64_t n) {
  if (n < WgmmaFrom() || !WgmmaEnabled() || !Sm90aDevice() || static_cast<size_t>(MaxSharedPerBlock()) < kWgMaxBytes) {
    return false;
  }
  for (int k = 0; k < count; ++k) {
    if (w[k].fmt != WFmt::kBF16 || w[k].cols != w[0].cols || w[k].cols % kStepCols != 0 ||
        w[k].cols / kStepCols < kParts) {
      return false;
    }
  }
  return true;
}

int64_t WgmmaTermsBytes(const DevWeight* w, int count, int64_t n, bool split) {
  return WgmmaTakes(w, count, n) ? n * w[0].cols * 2 * (split ? 2 : 1) : 0;
}

bool LaunchWgmmaGemm(MmaWeights ws, int64_t n, const float* x, uint16_t* terms, bool split, cudaStream_t s) {
  if (terms == nullptr || (reinterpret_cast<uintptr_t>(x) & 7u) != 0 ||
      (reinterpret_cast<uintptr_t>(terms) & 15u) != 0 || !WgmmaTakes(ws.w, ws.count, n)) {
    return false;
  }
  const WgTile tile = ChooseWgTile(ws.w, ws.count, n);
  const int64_t cols = ws.w[0].cols, halves = n * cols / 8;
  uint16_t* xh = terms;
  uint16_t* xl = split ? terms + n * cols : nullptr;
  constexpr int kSplitThreads = 256;
  LaunchPdl(SplitSlotsKernel, dim3(static_cast<unsigned>((halves + kSplitThreads - 1) / kSplitThreads)),
            dim3(kSplitThreads), 0, s, x, halves, reinterpret_cast<uint4*>(xh), reinterpret_cast<uint4*>(xl));
  split ? LaunchWgTile<true>(tile, ws, n, xh, xl, s) : LaunchWgTile<false>(tile, ws, n, xh, xl, s);
  return true;
}

}  // namespace llmhost::cuda::mma_rows
