#include "backend/cuda/common.cuh"
#include "backend/cuda/matmul_mma_stream.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kWarps = 8;       // as matmul_mma.cu: the steps of a 16-row tile dealt over 8 warps
constexpr int kRows = 16;
constexpr int kStepCols = 64;
constexpr int kWeightBytes = kRows * 128;     // a step of a tile: 16 rows x 64 bf16 columns
constexpr int kStageBytes = kWeightBytes + 4 * 32 * 16;  // and x: 4 x 16 bytes a lane

__device__ __forceinline__ void CopyAsync16(uint32_t dst, const void* src, bool valid) {
  // A zero source size fills the 16 bytes with zeros (a padding row or token).
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void CommitGroup() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void WaitGroup() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// grid: up to `tiles` resident blocks; block b takes row tiles b, b + grid, ...
// A warp's items are (tile, step) pairs in that order: step s = warp + 8 k of
// each tile (k < spw, the same count for every warp so that the block meets
// at each tile's end; a step past the row's end is empty). A step's rows
// reach the ring in whole 128-byte lines, and lane (g, c) then reads what
// matmul_mma.cu's lane (g, c) loads (rows g and g + 8, columns 64 s + 16 c,
// +16) and its token's x, and sums them as that kernel does. Each lane
// waits for its own copies (cp.async.wait_group), then the warp meets
// (__syncwarp) before reading others' and again before a stage is refilled.
// (Each lane copying only what it reads, 16 bytes at a 32-byte stride,
// measured half the plain kernel's speed on an H100: every L2 sector was
// fetched twice, half used each time.)
template <int S, bool Split>
__global__ void __launch_bounds__(kWarps * 32) MmaStreamKernel(MmaWeights ws, const float* x, int64_t n,
                                                               int64_t tiles, bool early) {
  extern __shared__ uint4 ring[];  // [warp][stage]: 16 rows x 8 chunks of weights, then x [4][lane]
  __shared__ float part[2][kWarps - 1][4][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const int64_t cols = ws.w[0].cols;
  const int steps = static_cast<int>(cols / kStepCols), spw = (steps + kWarps - 1) / kWarps;
  const int my_tiles = blockIdx.x < tiles ? static_cast<int>((tiles - 1 - blockIdx.x) / gridDim.x) + 1 : 0;
  const uint32_t mine_s = static_cast<uint32_t>(__cvta_generic_to_shared(ring)) + warp * S * kStageBytes;
  const bool tv = g < n;
  const float* xg = x + (tv ? g : 0) * cols + 16 * c;
  auto weight_of = [&](int64_t tile) {
    int i = 0;
    while (i + 1 < ws.count && tile >= ws.first[i + 1]) ++i;
    return i;
  };

  // A cursor over this warp's items in order: tile t (the block's t-th),
  // k-th step of it (step warp + 8 k), its ring stage; the tile's two rows'
  // bytes at this lane's columns, found once a tile.
  // A cursor over this warp's items in order: tile t (the block's t-th),
  // k-th step of it (step warp + 8 k), its ring stage; the tile rows this
  // lane copies (lane / 8 + 4 q, q < 4), found once a tile.
  struct Cursor {
    int t = 0, k = 0, stage = 0;
    const char* row[4];
    bool rv[4];
  };
  auto locate = [&](Cursor& q) {
    if (q.t >= my_tiles) return;
    const int64_t tile = blockIdx.x + static_cast<int64_t>(q.t) * gridDim.x;
    const int i = weight_of(tile);
    const DevWeight& w = ws.w[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t r = (tile - ws.first[i]) * kRows + (lane >> 3) + 4 * j;
      q.rv[j] = r < w.rows;
      q.row[j] = static_cast<const char*>(w.data) + (q.rv[j] ? r : 0) * w.row_bytes + 16 * (lane & 7);
    }
  };
  auto advance = [&](Cursor& q) {
    if (++q.stage == S) q.stage = 0;
    if (++q.k == spw) {
      q.k = 0;
      ++q.t;
      locate(q);
    }
  };
  // A step's 16 rows x 128 bytes go out as four fully used 512-byte copies
  // (row lane / 8 + 4 j, chunk lane % 8), each chunk stored at
  // [row][chunk ^ (row % 8)] so that the lanes' reads below meet no bank
  // twice; x as the lane sums it (valid tokens only).
  auto issue = [&](const Cursor& q, bool weights, bool xs) {
    const int s = warp + kWarps * q.k;
    if (q.t >= my_tiles || s >= steps) return;
    const uint32_t dst = mine_s + static_cast<uint32_t>(q.stage * kStageBytes);
    if (weights) {
      const int ch = lane & 7;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int r = (lane >> 3) + 4 * j;
        CopyAsync16(dst + (r * 8 + (ch ^ (r & 7))) * 16, q.row[j] + static_cast<int64_t>(s) * 128, q.rv[j]);
      }
    }
    if (xs && tv) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        CopyAsync16(dst + kWeightBytes + (k * 32 + lane) * 16, xg + static_cast<int64_t>(s) * kStepCols + 4 * k, true);
      }
    }
  };

  // Group 0 holds the first S - 1 steps' weights (sent before the wait for
  // the kernel before: weights are never written by a step) and step 0's x;
  // group j < S - 1 step j's x; then one group a step.
  Cursor ahead;
  locate(ahead);
  if (!early) WaitForPriorGrid();
  {
    Cursor q = ahead;
    for (int j = 0; j < S - 1; ++j, advance(q)) issue(q, true, false);
  }
  if (early) WaitForPriorGrid();
  for (int j = 0; j < S - 1; ++j, advance(ahead)) {
    issue(ahead, false, true);
    CommitGroup();
  }

  Cursor now;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (; now.t < my_tiles; advance(now)) {
    issue(ahead, true, true);
    CommitGroup();
    advance(ahead);
    WaitGroup<S - 1>();
    __syncwarp();  // the step's chunks came through other lanes' copies
    if (warp + kWarps * now.k < steps) {
      const char* stage = reinterpret_cast<const char*>(ring) + (warp * S + now.stage) * kStageBytes;
      const uint4* wrows = reinterpret_cast<const uint4*>(stage);
      const float4* xs = reinterpret_cast<const float4*>(stage + kWeightBytes) + lane;
#pragma unroll
      for (int ch = 0; ch < 2; ++ch) {
        const int pos = (2 * c + ch) ^ g;  // rows g and g + 8 share the swizzle
        const uint4 wa = wrows[g * 8 + pos], wb = wrows[(g + 8) * 8 + pos];
        const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const float4 a = tv ? xs[(2 * ch) * 32] : zero, b = tv ? xs[(2 * ch + 1) * 32] : zero;
        const float xv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        uint32_t h[4], l[4];
        SplitX8<Split>(xv, h, l);
        MmaChunk<Split>(wa, wb, h, l, acc);
      }
    }
    __syncwarp();  // every lane has read the stage before any lane's next copy into it
    if (now.k != spw - 1) continue;
    // The tile's end: the warps' sums added in warp order by warp 0, as
    // matmul_mma.cu adds them. part alternates by tile: warp 0 has read a
    // tile's partials before it reaches the next tile's barrier.
    auto& p = part[now.t & 1];
    if (warp > 0) {
#pragma unroll
      for (int e = 0; e < 4; ++e) p[warp - 1][e][lane] = acc[e];
    }
    __syncthreads();
    if (warp == 0) {
      const int64_t tile = blockIdx.x + static_cast<int64_t>(now.t) * gridDim.x;
      const int i = weight_of(tile);
      const int64_t rows = ws.w[i].rows, r0 = (tile - ws.first[i]) * kRows;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float v = acc[e];
#pragma unroll
        for (int q = 0; q < kWarps - 1; ++q) v += p[q][e][lane];
        const int64_t r = r0 + g + (e >= 2 ? 8 : 0), tok = 2 * c + (e & 1);
        if (r < rows && tok < n) ws.y[i][tok * rows + r] = v;
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e] = 0.0f;
  }
  WaitGroup<0>();
}

template <int S, bool Split>
void Launch(const MmaWeights& ws, const float* x, int64_t n, int64_t tiles, bool early, cudaStream_t s) {
  constexpr size_t kSmem = static_cast<size_t>(kWarps) * S * kStageBytes;
  static int per_sm[16] = {};  // resident blocks an SM, by device (the same for every launch)
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaFuncSetAttribute(MmaStreamKernel<S, Split>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem));
  int& fit = per_sm[dev & 15];
  if (fit <= 0) cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, MmaStreamKernel<S, Split>, kWarps * 32, kSmem);
  const int64_t blocks = std::min<int64_t>(tiles, static_cast<int64_t>(std::max(fit, 1)) * std::max(sms, 1));
  LaunchPdl(MmaStreamKernel<S, Split>, dim3(static_cast<unsigned>(blocks)), dim3(kWarps * 32), kSmem, s, ws, x, n,
            tiles, early);
}

}  // namespace

int MmaStreamStages() {
  const char* v = std::getenv("LLMHOST_CUDA_GEMV_STREAM");
  if (v == nullptr || std::strcmp(v, "off") == 0) return 0;
  return std::strcmp(v, "6") == 0 ? 6 : 3;
}

bool LaunchMmaStream(MmaWeights ws, const float* x, int64_t n, bool split, bool early, cudaStream_t s) {
  const int stages = MmaStreamStages();
  if (stages == 0 || n > 8 || (reinterpret_cast<uintptr_t>(x) & 15u) != 0) return false;
  ws.first[0] = 0;
  for (int k = 0; k < ws.count; ++k) ws.first[k + 1] = ws.first[k] + (ws.w[k].rows + kRows - 1) / kRows;
  const int64_t tiles = ws.first[ws.count];
  if (stages == 6) {
    split ? Launch<6, true>(ws, x, n, tiles, early, s) : Launch<6, false>(ws, x, n, tiles, early, s);
  } else {
    split ? Launch<3, true>(ws, x, n, tiles, early, s) : Launch<3, false>(ws, x, n, tiles, early, s);
  }
  return true;
}

}  // namespace llmhost::cuda
