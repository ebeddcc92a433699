#include "backend/cuda/matmul.cuh"
#include "backend/cuda/weight_load.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kWarps = 8;   // weight rows per block, one per warp
constexpr int kTokens = 8;  // tokens per block (each weight element loaded once for them)

// grid (ceil(rows / kWarps), ceil(n / kTokens)). Each lane sums columns
// lane, lane + 32, ... in order, then the warp's butterfly: the same bits for
// a token whatever n is (and as GroupedMatMulKernel's).
template <WFmt F>
__global__ void MatMulKernel(DevWeight w, const float* x, int64_t n, float* y) {
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokens;
  if (r >= w.rows) return;
  const int nt = n - t0 < kTokens ? static_cast<int>(n - t0) : kTokens;
  const int64_t cols = w.cols;
  float acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) {
    const float wv = LoadW<F>(w, r, c);
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t < nt) acc[t] = fmaf(wv, x[(t0 + t) * cols + c], acc[t]);
    }
  }
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t < nt) {
      const float v = WarpSum(acc[t]);
      if (lane == 0) y[(t0 + t) * w.rows + r] = v;
    }
  }
}

// grid (ceil(rows / kWarps), n): one token per block column.
template <WFmt F>
__global__ void GroupedMatMulKernel(const DevWeight* table, const int32_t* sel, int64_t sel_stride, int64_t rows,
                                    int64_t cols, const float* x, float* y) {
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t t = blockIdx.y;
  if (r >= rows) return;
  const int32_t e = sel[t * sel_stride];
  if (e < 0) return;
  const DevWeight w = table[e];
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) acc = fmaf(LoadW<F>(w, r, c), x[t * cols + c], acc);
  acc = WarpSum(acc);
  if (lane == 0) y[t * rows + r] = acc;
}

}  // namespace

constexpr int64_t kMaxGridY = 65535;

void LaunchMatMul(const DevWeight& w, const float* x, int64_t n, float* y, cudaStream_t s) {
  if (n <= 0 || w.rows <= 0) return;
  // Token ranges within gridDim.y's limit (a row's sum does not depend on the range).
  for (int64_t t0 = 0; t0 < n; t0 += kMaxGridY * kTokens) {
    const int64_t m = n - t0 < kMaxGridY * kTokens ? n - t0 : kMaxGridY * kTokens;
    const dim3 grid(Blocks(w.rows, kWarps), Blocks(m, kTokens));
    ForFormat(w.fmt, [&]<WFmt F>() {
      MatMulKernel<F><<<grid, kWarps * 32, 0, s>>>(w, x + t0 * w.cols, m, y + t0 * w.rows);
    });
  }
}

void LaunchGroupedMatMul(const DevWeight& like, const DevWeight* table, const int32_t* sel, int64_t sel_stride,
                         const float* x, int64_t n, float* y, cudaStream_t s) {
  if (n <= 0 || like.rows <= 0) return;
  for (int64_t t0 = 0; t0 < n; t0 += kMaxGridY) {
    const int64_t m = n - t0 < kMaxGridY ? n - t0 : kMaxGridY;
    const dim3 grid(Blocks(like.rows, kWarps), static_cast<unsigned>(m));
    ForFormat(like.fmt, [&]<WFmt F>() {
      GroupedMatMulKernel<F><<<grid, kWarps * 32, 0, s>>>(table, sel + t0 * sel_stride, sel_stride, like.rows,
                                                          like.cols, x + t0 * like.cols, y + t0 * like.rows);
    });
  }
}

}  // namespace llmhost::cuda
