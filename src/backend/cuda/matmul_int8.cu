#include "backend/cuda/common.cuh"
#include "backend/cuda/load_streamed.cuh"
#include "backend/cuda/matmul_int8.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxWeights = 4;
constexpr int kCodeOffset = 8;  // 4-bit codes meet x centred: q - 8

// A warp sums R rows together (each x chunk loaded once for them), each lane
// loading A chunks of each row before it sums them. The sums do not change
// with R and A (a row's chunks in the same lane order, then the same warp
// sum), so they may follow n. Small warps, many of them, measured fastest on
// an H100 (MLX 4-bit g64 of the Llama-3-8B shape, tok/s): one token 287 ->
// 339 with one row and one chunk (2 rows x 4 chunks before; 8 chunks: 262),
// 2 tokens 478 -> 562, 4 tokens 707 -> 803 and 8 tokens 973 -> 1,074 with 2
// rows x 2 chunks (4 x 2 before). Past one tile of 8 tokens, 4 rows a warp
// keep the number of blocks that read each row's codes down (32 sequences:
// 1,426 with 2 rows against ~1,546 with 4). Codes are loaded past L1
// (LoadStreamed: 2-4% faster than __ldg), which keeps x's chunks.
template <int T, bool Tiles>
struct Shape {
  static constexpr int R = T == 1 ? 1 : Tiles ? 4 : 2;
  static constexpr int A = T == 1 ? 1 : 2;
  static constexpr int kBlockRows = kWarps * R;
};

constexpr int kQuantWarps = 8;

int64_t XqBytes(int64_t n, int64_t cols) { return (n * cols + 15) / 16 * 16; }

// qx: xq[n][cols] (int8, each 32-column chunk in the order its codes are
// multiplied: a weight word's even columns, then its odd ones), then
// (dx, xs, Σ xq as int bits, 0)[n][cols / 32].
//
// One warp per chunk: lane i holds column i. The chunk's max and sums are
// butterflies (the max and the integer sum are exact in any order; the f32
// sum's order is fixed).
__global__ void __launch_bounds__(kQuantWarps * 32) QuantizeXKernel(const float* x, int64_t cols, int8_t* xq,
                                                                    float4* dxs, bool early) {
  // The GEMV after it may start at once: its first weight loads need no x.
  if (early) LaunchDependents();
  WaitForPriorGrid();
  const int lane = threadIdx.x & 31;
  const int64_t chunks = cols / 32, b = static_cast<int64_t>(blockIdx.x) * kQuantWarps + (threadIdx.x >> 5);
  const int64_t t = blockIdx.y;
  if (b >= chunks) return;
  const float v = x[t * cols + b * 32 + lane];
  float amax = fabsf(v);
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
  const float sum = WarpSum(v);
  // The CPU's rounding: x times the rounded reciprocal, to nearest even.
  const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
  const int q = __float2int_rn(__fmul_rn(v, id));
  // Column 8w + j of the chunk (word w, code j) goes to int 2w + (j & 1), byte j / 2.
  const int at = 4 * (2 * (lane >> 3) + (lane & 1)) + ((lane & 7) >> 1);
  xq[t * cols + b * 32 + at] = static_cast<int8_t>(q);
  const int qsum = __reduce_add_sync(0xFFFFFFFFu, q);
  if (lane == 0) dxs[t * chunks + b] = make_float4(amax / 127.0f, sum, __int_as_float(qsum), 0.0f);
}

struct Int8Weights {
  DevWeight w[kMaxWeights];
  float* y[kMaxWeights];
  int64_t first[kMaxWeights + 1];  // weight i's first block (of Shape's kBlockRows rows)
  int count = 0;
};

// Σ q · xq over one 32-bit word of codes (columns 8w .. 8w + 7): its even
// codes against `even`, its odd ones against `odd`.
__device__ __forceinline__ int DotWord(uint32_t word, int even, int odd, int s) {
  s = __dp4a(static_cast<int>(word & 0x0F0F0F0Fu), even, s);
  return __dp4a(static_cast<int>((word >> 4) & 0x0F0F0F0Fu), odd, s);
}

// One row's codes, scale and centred bias (bias + 8 · scale) for the chunks
// k0, k0 + 32, ... (A of them).
template <Elem SE, int A>
__device__ __forceinline__ void LoadChunks(const DevWeight& w, int64_t r, int64_t k0, int64_t chunks, int gshift,
                                           uint4 (&q)[A], float (&sc)[A], float (&bi)[A]) {
  const int64_t groups = w.cols >> (5 + gshift);
#pragma unroll
  for (int a = 0; a < A; ++a) {
    const int64_t k = k0 + a * 32;
    q[a] = make_uint4(0, 0, 0, 0);
    sc[a] = bi[a] = 0.0f;
    if (r < w.rows && k < chunks) {
      q[a] = LoadStreamed(reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(w.data) + r * w.row_bytes) + k);
      const int64_t g = r * groups + (k >> gshift);
      sc[a] = Load<SE>(w.scales, g);
      bi[a] = __fadd_rn(Load<SE>(w.biases, g), __fmul_rn(static_cast<float>(kCodeOffset), sc[a]));
    }
  }
}

// 1-D grid: block b takes kBlockRows rows (row block b / tiles, over the
// weights in turn) for tokens [T * (b % tiles), + T): a row block's token
// tiles are neighbours, so they find its codes in L2.
template <int T, bool Tiles, Elem SE>
__global__ void __launch_bounds__(kWarps * 32) Int8MlxKernel(Int8Weights ws, const int8_t* xq, const float4* dxs,
                                                             int64_t n, int tiles, int gshift) {
  using Sh = Shape<T, Tiles>;
  constexpr int kRowsPerWarp = Sh::R, kAhead = Sh::A, kBlockRows = Sh::kBlockRows;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t rb = blockIdx.x / tiles;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x % tiles) * T;
  int i = 0;
  while (i + 1 < ws.count && rb >= ws.first[i + 1]) ++i;
  const DevWeight& w = ws.w[i];
  const int64_t r0 = (rb - ws.first[i]) * kBlockRows + warp * kRowsPerWarp;
  const int nt = n - t0 < T ? static_cast<int>(n - t0) : T;
  const int64_t cols = w.cols, chunks = cols / 32;
  uint4 q[kRowsPerWarp][kAhead];
  float sc[kRowsPerWarp][kAhead], bi[kRowsPerWarp][kAhead];
  // Weights are never written by a step: their first loads go out before
  // the wait for the kernel that wrote x.
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    LoadChunks<SE, kAhead>(w, r0 + rr, lane, chunks, gshift, q[rr], sc[rr], bi[rr]);
  }
  WaitForPriorGrid();
  float acc[kRowsPerWarp][T];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
#pragma unroll
    for (int t = 0; t < T; ++t) acc[rr][t] = 0.0f;
  }
  for (int64_t k0 = lane; k0 < chunks; k0 += 32 * kAhead) {
    if (k0 != lane) {
#pragma unroll
      for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        LoadChunks<SE, kAhead>(w, r0 + rr, k0, chunks, gshift, q[rr], sc[rr], bi[rr]);
      }
    }
#pragma unroll
    for (int a = 0; a < kAhead; ++a) {
      const int64_t k = k0 + a * 32;
      if (k >= chunks) break;
#pragma unroll
      for (int t = 0; t < T; ++t) {
        if (t < nt) {
          const int4* xp = reinterpret_cast<const int4*>(xq + (t0 + t) * cols + k * 32);
          const int4 xa = __ldg(xp), xb = __ldg(xp + 1);
          const float4 d = __ldg(dxs + (t0 + t) * chunks + k);
          const int centre = __float_as_int(d.z) * kCodeOffset;  // Σ 8 · xq
#pragma unroll
          for (int rr = 0; rr < kRowsPerWarp; ++rr) {
            int s = DotWord(q[rr][a].x, xa.x, xa.y, 0);
            s = DotWord(q[rr][a].y, xa.z, xa.w, s);
            s = DotWord(q[rr][a].z, xb.x, xb.y, s);
            s = DotWord(q[rr][a].w, xb.z, xb.w, s) - centre;  // Σ (q - 8) · xq, exact
            acc[rr][t] = fmaf(__fmul_rn(sc[rr][a], d.x), static_cast<float>(s), acc[rr][t]);
            acc[rr][t] = fmaf(bi[rr][a], d.y, acc[rr][t]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float v = WarpSum(acc[rr][t]);
      if (lane == 0 && t < nt && r0 + rr < w.rows) ws.y[i][(t0 + t) * w.rows + r0 + rr] = v;
    }
  }
}

bool Aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }

// chunk index >> gshift = group index within a row (groups of 32, 64, 128).
int GroupShift(const DevWeight& w) { return w.group_size == 32 ? 0 : w.group_size == 64 ? 1 : 2; }

template <int T, bool Tiles = false>
void LaunchTokens(Int8Weights ws, const DevWeight* w, const int8_t* xq, const float4* dxs, int64_t n, int gshift,
                  cudaStream_t s) {
  constexpr int kBlockRows = Shape<T, Tiles>::kBlockRows;
  for (int k = 0; k < ws.count; ++k) ws.first[k + 1] = ws.first[k] + (w[k].rows + kBlockRows - 1) / kBlockRows;
  const int tiles = static_cast<int>((n + T - 1) / T);
  const dim3 grid(static_cast<unsigned>(ws.first[ws.count] * tiles));
  switch (ws.w[0].scale_type) {
    case Elem::kF32:
      LaunchPdl(Int8MlxKernel<T, Tiles, Elem::kF32>, grid, kWarps * 32, 0, s, ws, xq, dxs, n, tiles, gshift);
      break;
    case Elem::kF16:
      LaunchPdl(Int8MlxKernel<T, Tiles, Elem::kF16>, grid, kWarps * 32, 0, s, ws, xq, dxs, n, tiles, gshift);
      break;
    default:
      LaunchPdl(Int8MlxKernel<T, Tiles, Elem::kBF16>, grid, kWarps * 32, 0, s, ws, xq, dxs, n, tiles, gshift);
      break;
  }
}

}  // namespace

bool Int8MlxRows(const DevWeight& w) {
  if (w.fmt != WFmt::kMlx || w.bits != 4 || w.rows <= 0 || w.cols <= 0 || w.cols % 32 != 0) return false;
  if ((w.group_size != 32 && w.group_size != 64 && w.group_size != 128) || w.cols % w.group_size != 0) return false;
  if (w.scale_type == Elem::kF8 || w.row_bytes != w.cols / 2) return false;
  const uintptr_t scale_align = w.scale_type == Elem::kF32 ? 4 : 2;
  return Aligned(w.data, 16) && Aligned(w.scales, scale_align) && Aligned(w.biases, scale_align);
}

bool Int8Fusable(const DevWeight& a, const DevWeight& b) {
  return Int8MlxRows(a) && Int8MlxRows(b) && a.cols == b.cols && a.scale_type == b.scale_type &&
         a.group_size == b.group_size;
}

int64_t Int8QxBytes(int64_t n, int64_t cols) { return XqBytes(n, cols) + n * (cols / 32) * 16; }

void LaunchQuantizeX(const float* x, int64_t n, int64_t cols, void* qx, cudaStream_t s) {
  if (n <= 0 || cols < 32) return;
  auto* xq = static_cast<int8_t*>(qx);
  auto* dxs = reinterpret_cast<float4*>(xq + XqBytes(n, cols));
  const dim3 grid(Blocks(cols / 32, kQuantWarps), static_cast<unsigned>(n));
  // LLMHOST_CUDA_INT8_EARLY=off: the GEMV is scheduled only once this kernel has ended (read at each call).
  const char* e = std::getenv("LLMHOST_CUDA_INT8_EARLY");
  const bool early = e == nullptr || std::strcmp(e, "off") != 0;
  LaunchPdl(QuantizeXKernel, grid, kQuantWarps * 32, 0, s, x, cols, xq, dxs, early);
}

void LaunchInt8MlxMatMul(const DevWeight* w, float* const* y, int count, const void* qx, int64_t n,
                         cudaStream_t s) {
  if (n <= 0 || count < 1 || count > kMaxWeights) return;
  Int8Weights ws;
  ws.count = count;
  ws.first[0] = 0;
  for (int k = 0; k < count; ++k) {
    ws.w[k] = w[k];
    ws.y[k] = y[k];
  }
  const auto* xq = static_cast<const int8_t*>(qx);
  const auto* dxs = reinterpret_cast<const float4*>(xq + XqBytes(n, w[0].cols));
  const int gshift = GroupShift(w[0]);
  if (n == 1) {
    LaunchTokens<1>(ws, w, xq, dxs, n, gshift, s);
  } else if (n == 2) {
    LaunchTokens<2>(ws, w, xq, dxs, n, gshift, s);
  } else if (n <= 4) {
    LaunchTokens<4>(ws, w, xq, dxs, n, gshift, s);
  } else if (n <= 8) {
    LaunchTokens<8>(ws, w, xq, dxs, n, gshift, s);
  } else {
    LaunchTokens<8, true>(ws, w, xq, dxs, n, gshift, s);
  }
}

}  // namespace llmhost::cuda
