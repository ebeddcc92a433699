#include "backend/cuda/common.cuh"
#include "backend/cuda/rms_norm.cuh"

namespace llmhost::cuda {
namespace {

// One block per row: each thread's strided sum of squares in f64, the warps'
// butterflies, then warp 0's over the warps' sums. The order depends on dim
// alone (which picks the block size), never on the batch. A wide block for a
// hidden-size row: a decode step's norm is one block, so its latency is the
// whole op's. With AddFirst, x += t first (x and t rows of dim, contiguous):
// each thread adds, stores and squares the same elements, so the sums are
// those of an Add and then an RmsNorm.
template <int kThreads, bool AddFirst>
__global__ void __launch_bounds__(kThreads) RmsNormKernel(const float* x, const float* t, int64_t group,
                                                           int64_t group_stride, int64_t dim, const float* weight,
                                                           float eps, bool add_one, float* out) {
  WaitForPriorGrid();
  constexpr int kWarps = kThreads / 32;
  const int64_t r = blockIdx.x;
  const int64_t off = (r / group) * group_stride + (r % group) * dim;
  const float* xr = x + off;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double ss = 0;
  if constexpr (AddFirst) {
    float* xw = const_cast<float*>(xr);
    const float* tr = t + off;
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
      const float v = xw[i] + tr[i];
      xw[i] = v;
      ss += static_cast<double>(v) * v;
    }
  } else {
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) ss += static_cast<double>(xr[i]) * xr[i];
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xFFFFFFFFu, ss, o);
  __shared__ double part[kWarps];
  __shared__ float inv_shared;
  if (lane == 0) part[warp] = ss;
  __syncthreads();
  if (warp == 0) {
    double v = lane < kWarps ? part[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    if (lane == 0) {
      const float var = static_cast<float>(v / static_cast<double>(dim));
      inv_shared = static_cast<float>(1.0 / sqrt(static_cast<double>(var + eps)));
    }
  }
  __syncthreads();
  const float inv = inv_shared;
  float* yr = out + off;  // in place allowed: each thread rewrites only what it read
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    const float wv = add_one ? 1.0f + weight[i] : weight[i];
    yr[i] = (xr[i] * inv) * wv;
  }
}

}  // namespace

void LaunchRmsNorm(const float* x, int64_t rows, int64_t group, int64_t group_stride, int64_t dim,
                   const float* weight, float eps, bool add_one, float* out, cudaStream_t s) {
  if (rows <= 0) return;
  const unsigned grid = static_cast<unsigned>(rows);
  if (dim >= 2048) {
    LaunchPdl(RmsNormKernel<1024, false>, grid, 1024, 0, s, x, nullptr, group, group_stride, dim, weight, eps, add_one,
              out);
  } else {
    LaunchPdl(RmsNormKernel<128, false>, grid, 128, 0, s, x, nullptr, group, group_stride, dim, weight, eps, add_one,
              out);
  }
}

void LaunchAddRmsNorm(float* x, const float* t, int64_t rows, int64_t dim, const float* weight, float eps,
                      bool add_one, float* out, cudaStream_t s) {
  if (rows <= 0) return;
  const unsigned grid = static_cast<unsigned>(rows);
  if (dim >= 2048) {
    LaunchPdl(RmsNormKernel<1024, true>, grid, 1024, 0, s, x, t, int64_t{1}, dim, dim, weight, eps, add_one, out);
  } else {
    LaunchPdl(RmsNormKernel<128, true>, grid, 128, 0, s, x, t, int64_t{1}, dim, dim, weight, eps, add_one, out);
  }
}

}  // namespace llmhost::cuda
