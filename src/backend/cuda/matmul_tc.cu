#include <cuda_fp16.h>
#include <mma.h>

#include "backend/cuda/matmul_tc.cuh"
#include "backend/cuda/weight_load.cuh"

namespace llmhost::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kBM = 64;        // tokens per block
constexpr int kBN = 128;       // weight rows per block
constexpr int kBK = 32;        // columns per shared-memory stage
constexpr int kLd = kBK + 8;   // padded row of a stage (a multiple of 8, as wmma wants)
constexpr int kThreads = 256;  // 8 warps: 2 along tokens x 4 along rows, 32 x 32 outputs each
constexpr int kTargetExp = 14; // a row's largest magnitude is scaled into [2^13, 2^14)

// One block per row: the power of two that brings max |x| below 2^14, then
// the row in f16. A row of zeros (or one holding inf / NaN) keeps scale 1.
__global__ void RowsToF16Kernel(const float* x, int64_t cols, __half* xh, float* inv_scale) {
  const int64_t t = blockIdx.x;
  const float* row = x + t * cols;
  float m = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, fabsf(row[c]));
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
  __shared__ float warp_max[32];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x < 32) {
    m = threadIdx.x < blockDim.x / 32 ? warp_max[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
    if (threadIdx.x == 0) warp_max[0] = m;
  }
  __syncthreads();
  m = warp_max[0];
  int e = 0;
  if (m > 0.0f && m <= 3.0e38f) {
    int ex;
    frexpf(m, &ex);  // m = f * 2^ex, f in [0.5, 1)
    e = min(kTargetExp - ex, 126);  // 2^e stays a normal float
  }
  const float scale = ldexpf(1.0f, e);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) xh[t * cols + c] = __float2half_rn(row[c] * scale);
  if (threadIdx.x == 0) inv_scale[t] = ldexpf(1.0f, -e);
}

struct Stage {
  __half x[kBM * kLd];
  __half w[kBN * kLd];
};

// grid (ceil(rows / kBN), ceil(n / kBM)).
template <WFmt F>
__global__ void __launch_bounds__(kThreads)
    TensorCoreMatMulKernel(DevWeight w, const __half* xh, const float* inv_scale, int64_t n, float* y) {
  __shared__ __align__(32) Stage st;
  __shared__ __align__(32) float out[kThreads / 32][16 * 16];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp >> 2, wn = warp & 3;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kBM, r0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const int64_t cols = w.cols, rows = w.rows;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  // Each thread stages the same column of successive rows (coalesced along columns).
  const int sc = tid & (kBK - 1), sr = tid / kBK;  // sr in [0, 8)
  const __half zero = __float2half_rn(0.0f);
  for (int64_t k0 = 0; k0 < cols; k0 += kBK) {
    const int64_t c = k0 + sc;
    const bool in_cols = c < cols;
#pragma unroll
    for (int i = 0; i < kBM / 8; ++i) {
      const int r = sr + 8 * i;
      const int64_t t = t0 + r;
      st.x[r * kLd + sc] = in_cols && t < n ? xh[t * cols + c] : zero;
    }
#pragma unroll 4
    for (int i = 0; i < kBN / 8; ++i) {
      const int r = sr + 8 * i;
      const int64_t wr = r0 + r;
      st.w[r * kLd + sc] = in_cols && wr < rows ? __float2half_rn(LoadW<F>(w, wr, c)) : zero;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], st.x + (wm * 32 + i * 16) * kLd + kk, kLd);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], st.w + (wn * 32 + j * 16) * kLd + kk, kLd);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  // Through shared memory, so that edge tiles write only what is in bounds.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(out[warp], acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int64_t tb = t0 + wm * 32 + i * 16, rb = r0 + wn * 32 + j * 16;
      for (int e = lane; e < 256; e += 32) {
        const int64_t t = tb + e / 16, r = rb + e % 16;
        if (t < n && r < rows) y[t * rows + r] = out[warp][e] * inv_scale[t];
      }
      __syncwarp();
    }
  }
}

}  // namespace

constexpr int64_t kMaxGridY = 65535;

int64_t TensorCoreScratchBytes(int64_t n, int64_t cols) {
  const int64_t half_bytes = (n * cols * 2 + 255) / 256 * 256;
  return half_bytes + n * 4;
}

void LaunchTensorCoreMatMul(const DevWeight& w, const float* x, int64_t n, float* y, void* scratch, cudaStream_t s) {
  if (n <= 0 || w.rows <= 0) return;
  auto* xh = static_cast<__half*>(scratch);
  auto* inv = reinterpret_cast<float*>(static_cast<char*>(scratch) + (n * w.cols * 2 + 255) / 256 * 256);
  for (int64_t t0 = 0; t0 < n; t0 += 0x7FFFFFFF) {
    const int64_t m = n - t0 < 0x7FFFFFFF ? n - t0 : 0x7FFFFFFF;
    RowsToF16Kernel<<<static_cast<unsigned>(m), 256, 0, s>>>(x + t0 * w.cols, w.cols, xh + t0 * w.cols, inv + t0);
  }
  for (int64_t t0 = 0; t0 < n; t0 += kMaxGridY * kBM) {
    const int64_t m = n - t0 < kMaxGridY * kBM ? n - t0 : kMaxGridY * kBM;
    const dim3 grid(Blocks(w.rows, kBN), Blocks(m, kBM));
    ForFormat(w.fmt, [&]<WFmt F>() {
      TensorCoreMatMulKernel<F><<<grid, kThreads, 0, s>>>(w, xh + t0 * w.cols, inv + t0, m, y + t0 * w.rows);
    });
  }
}

}  // namespace llmhost::cuda
