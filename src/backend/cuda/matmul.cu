#include "backend/cuda/common.cuh"
#include "backend/cuda/matmul.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kWarps = 8;   // weight rows per block, one per warp
constexpr int kTokens = 8;  // tokens per block (each weight element loaded once for them)

// grid (ceil(rows / kWarps), ceil(n / kTokens)). Each lane sums columns
// lane, lane + 32, ... in order, then the warp's butterfly: the same bits for
// a token whatever n is (and as GroupedMatMulKernel's).
template <Elem E>
__global__ void MatMulKernel(const void* w, const float* x, int64_t n, int64_t rows, int64_t cols, float* y) {
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokens;
  if (r >= rows) return;
  const int nt = n - t0 < kTokens ? static_cast<int>(n - t0) : kTokens;
  float acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;
  const int64_t row_base = r * cols;
  for (int64_t c = lane; c < cols; c += 32) {
    const float wv = Load<E>(w, row_base + c);
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t < nt) acc[t] = fmaf(wv, x[(t0 + t) * cols + c], acc[t]);
    }
  }
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t < nt) {
      const float v = WarpSum(acc[t]);
      if (lane == 0) y[(t0 + t) * rows + r] = v;
    }
  }
}

template <Elem E>
__global__ void GroupedMatMulKernel(const void* const* table, const int32_t* sel, int64_t sel_stride,
                                    const float* x, int64_t rows, int64_t cols, float* y) {
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t t = blockIdx.y;
  if (r >= rows) return;
  const int32_t e = sel[t * sel_stride];
  if (e < 0) return;
  const void* w = table[e];
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) acc = fmaf(Load<E>(w, r * cols + c), x[t * cols + c], acc);
  acc = WarpSum(acc);
  if (lane == 0) y[t * rows + r] = acc;
}

}  // namespace

void LaunchMatMul(Elem w_type, const void* w, const float* x, int64_t n, int64_t rows, int64_t cols,
                  float* y, cudaStream_t s) {
  if (n <= 0 || rows <= 0) return;
  const dim3 grid(Blocks(rows, kWarps), Blocks(n, kTokens));
  switch (w_type) {
    case Elem::kF32: MatMulKernel<Elem::kF32><<<grid, kWarps * 32, 0, s>>>(w, x, n, rows, cols, y); break;
    case Elem::kF16: MatMulKernel<Elem::kF16><<<grid, kWarps * 32, 0, s>>>(w, x, n, rows, cols, y); break;
    case Elem::kBF16: MatMulKernel<Elem::kBF16><<<grid, kWarps * 32, 0, s>>>(w, x, n, rows, cols, y); break;
  }
}

void LaunchGroupedMatMul(Elem w_type, const void* const* table, const int32_t* sel, int64_t sel_stride,
                         const float* x, int64_t n, int64_t rows, int64_t cols, float* y, cudaStream_t s) {
  if (n <= 0 || rows <= 0) return;
  const dim3 grid(Blocks(rows, kWarps), static_cast<unsigned>(n));
  switch (w_type) {
    case Elem::kF32: GroupedMatMulKernel<Elem::kF32><<<grid, kWarps * 32, 0, s>>>(table, sel, sel_stride, x, rows, cols, y); break;
    case Elem::kF16: GroupedMatMulKernel<Elem::kF16><<<grid, kWarps * 32, 0, s>>>(table, sel, sel_stride, x, rows, cols, y); break;
    case Elem::kBF16: GroupedMatMulKernel<Elem::kBF16><<<grid, kWarps * 32, 0, s>>>(table, sel, sel_stride, x, rows, cols, y); break;
  }
}

}  // namespace llmhost::cuda
