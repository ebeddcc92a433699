#include "backend/cuda/matmul_mma_mlx_stream.cuh"
#include "backend/cuda/mma_mlx.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kWarps = 8;            // as matmul_mma_mlx.cu: a tile's steps dealt over 8 warps
constexpr int kStages = 6;           // steps in the ring per warp (5 in flight while one is summed)
constexpr int kSlotBytes = 32 * 16;  // a 16-byte slot of every lane of a warp

__device__ __forceinline__ void CopyAsync(uint32_t dst, const void* src, int bytes, bool valid) {
  // A zero source size fills with zeros (a padding row). 16 bytes bypass L1.
  if (bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
  } else if (bytes == 8) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 8 : 0));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0));
  }
}
__device__ __forceinline__ void CommitGroup() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void WaitGroup() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// A warp's stage of the ring: the lanes' 16 bytes of rows g and g + 8
// (slots 0, 1), their scales and biases for the step's groups (row g then
// g + 8, scales then biases: 4 x 2G bytes in 1 or 2 slots), then token 0's
// x for the four lanes of row 0, 16-byte chunk q of lane c at [q][c].
template <int Bits, int GS>
struct Ring {
  static constexpr int kGroups = Layout<Bits>::kStepCols / GS;
  static constexpr int kParamBytes = 2 * kGroups;  // one row's scales (or biases) of a step
  static constexpr int kParamSlots = (4 * kParamBytes + 15) / 16;
  static constexpr int kXChunks = Layout<Bits>::kWordCols;  // 16-byte chunks of x a lane of row 0 sums a step
  static constexpr int kStageBytes = (2 + kParamSlots) * kSlotBytes + kXChunks * 4 * 16;
  static constexpr int kBytes = kWarps * kStages * kStageBytes;
};

// grid: up to `tiles` resident blocks; block b takes 15-row tiles b, b +
// grid, ... A warp's items are (tile, step) pairs in that order (step warp
// + 8 k, k < spw for every warp, so that the block meets at each tile's
// end). Each lane copies what matmul_mma_mlx.cu's lane (g, c) loads (rows g
// and g + 8, bytes 64 s + 16 c, +16, and the rows' step parameters; row 15 is
// the ones row, never copied), lanes (0, c) also token 0's x for the
// columns lane c sums; cp.async.wait_group makes a thread's copies visible to
// it, and a warp's x is read only by the lanes that copied it, after a
// __syncwarp.
template <int Bits, int GS, bool Split>
__global__ void __launch_bounds__(kWarps * 32) MmaMlxStreamKernel(MmaWeights ws, const float* x, int64_t tiles,
                                                                  bool early) {
  using L = Layout<Bits>;
  using R = Ring<Bits, GS>;
  constexpr int kStepCols = L::kStepCols, kGroups = R::kGroups, kSlotsPerGroup = 4 / kGroups;
  constexpr int kParamWords = (kGroups + 1) / 2, kPairs = L::kPairs, kW = L::kWordCols;
  extern __shared__ uint4 ring[];
  __shared__ float part_sums[2][kWarps - 1][4][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const int64_t cols = ws.w[0].cols, groups = cols / GS;
  const int steps = static_cast<int>(cols / kStepCols), spw = (steps + kWarps - 1) / kWarps;
  const int my_tiles = blockIdx.x < tiles ? static_cast<int>((tiles - 1 - blockIdx.x) / gridDim.x) + 1 : 0;
  const char* base = reinterpret_cast<const char*>(ring) + warp * kStages * R::kStageBytes;
  const uint32_t base_s = static_cast<uint32_t>(__cvta_generic_to_shared(base));
  const Elem param_type = ws.w[0].scale_type;
  const uint4 ones = make_uint4(L::kOnes, L::kOnes, L::kOnes, L::kOnes);
  auto weight_of = [&](int64_t tile) {
    int i = 0;
    while (i + 1 < ws.count && tile >= ws.first[i + 1]) ++i;
    return i;
  };

  struct Cursor {
    int t = 0, k = 0, stage = 0;
    const char* row[2];
    const uint16_t* scales[2];
    const uint16_t* biases[2];
    bool rv[2];
  };
  auto locate = [&](Cursor& q) {
    if (q.t >= my_tiles) return;
    const int64_t tile = blockIdx.x + static_cast<int64_t>(q.t) * gridDim.x;
    const int i = weight_of(tile);
    const DevWeight& w = ws.w[i];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int f = g + 8 * half;
      const int64_t r = (tile - ws.first[i]) * kMlxTileRows + f;
      q.rv[half] = f < kMlxTileRows && r < w.rows;
      const int64_t rr = q.rv[half] ? r : 0;
      q.row[half] = static_cast<const char*>(w.data) + rr * w.row_bytes + 16 * c;
      q.scales[half] = static_cast<const uint16_t*>(w.scales) + rr * groups;
      q.biases[half] = static_cast<const uint16_t*>(w.biases) + rr * groups;
    }
  };
  auto advance = [&](Cursor& q) {
    if (++q.stage == kStages) q.stage = 0;
    if (++q.k == spw) {
      q.k = 0;
      ++q.t;
      locate(q);
    }
  };
  auto issue = [&](const Cursor& q, bool weights, bool xs) {
    const int s = warp + kWarps * q.k;
    if (q.t >= my_tiles || s >= steps) return;
    const uint32_t stage = base_s + static_cast<uint32_t>(q.stage * R::kStageBytes);
    if (weights) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        if (g != 7 || half == 0) {  // row 15, the ones row, is never read
          CopyAsync(stage + half * kSlotBytes + 16 * lane, q.row[half] + static_cast<int64_t>(s) * 64, 16, q.rv[half]);
        }
        // Row g's scales at 0, row g + 8's at kParamBytes, then the biases
        // (zeros for a padding row and the ones row).
        const uint32_t p = stage + 2 * kSlotBytes + lane * 4 * R::kParamBytes + half * R::kParamBytes;
        CopyAsync(p, q.scales[half] + kGroups * s, R::kParamBytes, q.rv[half]);
        CopyAsync(p + 2 * R::kParamBytes, q.biases[half] + kGroups * s, R::kParamBytes, q.rv[half]);
      }
    }
    if (xs && g == 0) {
      const uint32_t xb = stage + (2 + R::kParamSlots) * kSlotBytes;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float* src = x + static_cast<int64_t>(s) * kStepCols + SlotCol<kGroups, kW>(c, j);
#pragma unroll
        for (int h = 0; h < kW / 4; ++h) {
          const int q = j * (kW / 4) + h;
          CopyAsync(xb + (q * 4 + c) * 16, src + 4 * h, 16, true);
        }
      }
    }
  };

  Cursor ahead;
  locate(ahead);
  if (!early) WaitForPriorGrid();
  {
    Cursor q = ahead;
    for (int j = 0; j < kStages - 1; ++j, advance(q)) issue(q, true, false);
  }
  if (early) WaitForPriorGrid();
  for (int j = 0; j < kStages - 1; ++j, advance(ahead)) {
    issue(ahead, false, true);
    CommitGroup();
  }

  Cursor now;
  float total[4] = {0.0f, 0.0f, 0.0f, 0.0f}, part[4];
  for (; now.t < my_tiles; advance(now)) {
    issue(ahead, true, true);
    CommitGroup();
    advance(ahead);
    WaitGroup<kStages - 1>();
    __syncwarp();  // lanes (0, c) copied the warp's x
    if (warp + kWarps * now.k < steps) {
      const char* stage = base + now.stage * R::kStageBytes;
      uint32_t wv[2][4], sw[2][kParamWords], bw[2][kParamWords];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const uint4 v = g == 7 && half == 1 ? ones : reinterpret_cast<const uint4*>(stage + half * kSlotBytes)[lane];
        wv[half][0] = v.x, wv[half][1] = v.y, wv[half][2] = v.z, wv[half][3] = v.w;
        const char* p = stage + 2 * kSlotBytes + lane * 4 * R::kParamBytes + half * R::kParamBytes;
#pragma unroll
        for (int k = 0; k < kParamWords; ++k) {
          sw[half][k] = reinterpret_cast<const uint32_t*>(p)[k];
          bw[half][k] = reinterpret_cast<const uint32_t*>(p + 2 * R::kParamBytes)[k];
        }
      }
      const float* xb = reinterpret_cast<const float*>(stage + (2 + R::kParamSlots) * kSlotBytes);
      Regroup<kGroups>(wv[0], c);
      Regroup<kGroups>(wv[1], c);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        uint32_t a0[kPairs], a1[kPairs];
        Codes<Bits>(wv[0][j], a0);
        Codes<Bits>(wv[1][j], a1);
        if (j % kSlotsPerGroup == 0) part[0] = part[1] = part[2] = part[3] = 0.0f;
        float v[kW];
#pragma unroll
        for (int h = 0; h < kW / 4; ++h) {
          const float4 f = g == 0 ? reinterpret_cast<const float4*>(xb)[(j * (kW / 4) + h) * 4 + c]
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          v[4 * h] = f.x, v[4 * h + 1] = f.y, v[4 * h + 2] = f.z, v[4 * h + 3] = f.w;
        }
        uint32_t h[kPairs], l[kPairs];
        XTermsOf<Bits, Split>(v, h, l);
#pragma unroll
        for (int m = 0; m < kPairs; m += 2) {
          Mma(part, a0[m], a1[m], a0[m + 1], a1[m + 1], h[m], h[m + 1]);
          if constexpr (Split) Mma(part, a0[m], a1[m], a0[m + 1], a1[m + 1], l[m], l[m + 1]);
        }
        if (j % kSlotsPerGroup == kSlotsPerGroup - 1) {
          const int group = j / kSlotsPerGroup;
          const float sc[2] = {ParamAt(sw[0], group, param_type), ParamAt(sw[1], group, param_type)};
          const float bi[2] = {ParamAt(bw[0], group, param_type), ParamAt(bw[1], group, param_type)};
          const float xs0 = __shfl_sync(0xFFFFFFFFu, part[2], 28 + c);
          const float xs1 = __shfl_sync(0xFFFFFFFFu, part[3], 28 + c);
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int half = e >> 1;
            total[e] = fmaf(sc[half], part[e], fmaf(bi[half], (e & 1) ? xs1 : xs0, total[e]));
          }
        }
      }
    }
    if (now.k != spw - 1) continue;
    // The tile's end: the warps' totals added in warp order by warp 0.
    auto& p = part_sums[now.t & 1];
    if (warp > 0) {
#pragma unroll
      for (int e = 0; e < 4; ++e) p[warp - 1][e][lane] = total[e];
    }
    __syncthreads();
    if (warp == 0) {
      const int64_t tile = blockIdx.x + static_cast<int64_t>(now.t) * gridDim.x;
      const int i = weight_of(tile);
      const int64_t rows = ws.w[i].rows, r0 = (tile - ws.first[i]) * kMlxTileRows;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float v = total[e];
#pragma unroll
        for (int q = 0; q < kWarps - 1; ++q) v += p[q][e][lane];
        const int f = g + (e >= 2 ? 8 : 0);
        const int64_t r = r0 + f, tok = 2 * c + (e & 1);
        if (f < kMlxTileRows && r < rows && tok < 1) ws.y[i][r] = v;
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) total[e] = 0.0f;
  }
  WaitGroup<0>();
}

template <int Bits, int GS, bool Split>
void Launch(const MmaWeights& ws, const float* x, int64_t tiles, bool early, cudaStream_t s) {
  constexpr size_t kSmem = Ring<Bits, GS>::kBytes;
  static int per_sm[16] = {};  // resident blocks an SM, by device
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const auto kernel = MmaMlxStreamKernel<Bits, GS, Split>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem));
  int& fit = per_sm[dev & 15];
  if (fit <= 0) cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, kWarps * 32, kSmem);
  const int64_t blocks = std::min<int64_t>(tiles, static_cast<int64_t>(std::max(fit, 1)) * std::max(sms, 1));
  LaunchPdl(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kWarps * 32), kSmem, s, ws, x, tiles, early);
}

}  // namespace

bool MlxStreamEnabled() {
  const char* v = std::getenv("LLMHOST_CUDA_MLX_STREAM");
  return v != nullptr && std::strcmp(v, "on") == 0;
}

bool LaunchMmaMlxStream(MmaWeights ws, const float* x, int64_t n, bool split, bool early, cudaStream_t s) {
  const DevWeight& w = ws.w[0];
  if (!MlxStreamEnabled() || n != 1 || (reinterpret_cast<uintptr_t>(x) & 15u) != 0) return false;
  if (w.bits == 8 && w.group_size == 64) return false;  // one group a step: 2-byte parameters
  ws.first[0] = 0;
  for (int k = 0; k < ws.count; ++k) {
    ws.first[k + 1] = ws.first[k] + (ws.w[k].rows + kMlxTileRows - 1) / kMlxTileRows;
  }
  const int64_t tiles = ws.first[ws.count];
  auto go = [&]<int Bits, int GS>() {
    split ? Launch<Bits, GS, true>(ws, x, tiles, early, s) : Launch<Bits, GS, false>(ws, x, tiles, early, s);
  };
  if (w.bits == 4) {
    w.group_size == 32 ? go.template operator()<4, 32>() : go.template operator()<4, 64>();
  } else {
    go.template operator()<8, 32>();
  }
  return true;
}

}  // namespace llmhost::cuda
