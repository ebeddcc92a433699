#include "backend/cuda/argmax.cuh"

#include <cmath>

#include "backend/cuda/common.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 512;

// The better of two candidates: the larger value, the lower index between
// equal ones (-0 == +0, as the host's x[i] == max). NaN never wins: a
// comparison with it is false, and a NaN candidate starts as -inf.
__device__ __forceinline__ void Better(float& v, int64_t& i, float ov, int64_t oi) {
  if (ov > v || (ov == v && oi < i)) v = ov, i = oi;
}

// One block a row: each thread its strided columns, then the warps' and the
// block's reductions; the index is exact whatever the order (ties resolved
// by index), so the result is the host's.
__global__ void ArgMaxRowsKernel(const float* x, int64_t cols, int32_t* out) {
  WaitForPriorGrid();
  const float* row = x + int64_t{blockIdx.x} * cols;
  float v = -INFINITY;
  int64_t idx = cols;  // past the end: loses every tie
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) Better(v, idx, row[c], c);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, off);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, idx, off);
    Better(v, idx, ov, oi);
  }
  __shared__ float sv[kThreads / 32];
  __shared__ int64_t si[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sv[warp] = v, si[warp] = idx;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? sv[lane] : -INFINITY;
    idx = lane < kThreads / 32 ? si[lane] : cols;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, v, off);
      const int64_t oi = __shfl_xor_sync(0xffffffffu, idx, off);
      Better(v, idx, ov, oi);
    }
    if (lane == 0) out[blockIdx.x] = isfinite(v) && idx < cols ? static_cast<int32_t>(idx) : -1;
  }
}

}  // namespace

void LaunchArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out, cudaStream_t s) {
  if (rows > 0 && cols > 0) LaunchPdl(ArgMaxRowsKernel, dim3(static_cast<unsigned>(rows)), dim3(kThreads), 0, s, x, cols, out);
}

}  // namespace llmhost::cuda
