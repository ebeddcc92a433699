#include "backend/cuda/common.cuh"
#include "backend/cuda/elementwise.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void AddKernel(const float* a, const float* b, int64_t n, float* out) {
  WaitForPriorGrid();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

__global__ void AddBiasKernel(float* x, int64_t cols, int64_t stride, const float* bias) {
  WaitForPriorGrid();
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  if (c < cols) x[blockIdx.x * stride + c] += bias[c];
}

__global__ void ScaleKernel(float* x, int64_t n, float v) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) x[i] *= v;
}

__global__ void FillKernel(float* x, int64_t n, float v) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) x[i] = v;
}

__global__ void SoftcapKernel(float* x, int64_t n, float cap) {
  WaitForPriorGrid();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) x[i] = static_cast<float>(cap * tanh(static_cast<double>(x[i]) / cap));
}

__global__ void GeluKernel(float* x, int64_t n) {
  WaitForPriorGrid();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) {
    const double v = x[i];
    x[i] = static_cast<float>(0.5 * v * (1.0 + erf(v * M_SQRT1_2)));
  }
}

__global__ void TanhKernel(float* x, int64_t n) {
  WaitForPriorGrid();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) x[i] = static_cast<float>(tanh(static_cast<double>(x[i])));
}

__global__ void GatherRowsKernel(const float* src, int64_t cols, const int32_t* rows, float* dst) {
  WaitForPriorGrid();
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  if (c < cols) dst[blockIdx.x * cols + c] = src[static_cast<int64_t>(rows[blockIdx.x]) * cols + c];
}

__global__ void GatherColumnsKernel(const float* src, int64_t cols, const int32_t* order, float* dst) {
  WaitForPriorGrid();
  const int64_t j = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  if (j < cols) dst[blockIdx.x * cols + j] = src[blockIdx.x * cols + order[j]];
}

}  // namespace

void LaunchAdd(const float* a, const float* b, int64_t n, float* out, cudaStream_t s) {
  if (n > 0) LaunchPdl(AddKernel, Blocks(n, kThreads), kThreads, 0, s, a, b, n, out);
}

void LaunchAddBias(float* x, int64_t rows, int64_t cols, int64_t stride, const float* bias, cudaStream_t s) {
  if (rows > 0 && cols > 0) {
    LaunchPdl(AddBiasKernel, dim3(static_cast<unsigned>(rows), Blocks(cols, kThreads)), kThreads, 0, s, x, cols, stride,
              bias);
  }
}

void LaunchScale(float* x, int64_t n, float v, cudaStream_t s) {
  if (n > 0) ScaleKernel<<<Blocks(n, kThreads), kThreads, 0, s>>>(x, n, v);
}

void LaunchFill(float* x, int64_t n, float v, cudaStream_t s) {
  if (n > 0) FillKernel<<<Blocks(n, kThreads), kThreads, 0, s>>>(x, n, v);
}

void LaunchSoftcap(float* x, int64_t n, float cap, cudaStream_t s) {
  if (n > 0) LaunchPdl(SoftcapKernel, Blocks(n, kThreads), kThreads, 0, s, x, n, cap);
}

void LaunchGelu(float* x, int64_t n, cudaStream_t s) {
  if (n > 0) LaunchPdl(GeluKernel, Blocks(n, kThreads), kThreads, 0, s, x, n);
}

void LaunchTanh(float* x, int64_t n, cudaStream_t s) {
  if (n > 0) LaunchPdl(TanhKernel, Blocks(n, kThreads), kThreads, 0, s, x, n);
}

void LaunchGatherRows(const float* src, int64_t cols, const int32_t* rows, int64_t n, float* dst, cudaStream_t s) {
  if (n > 0 && cols > 0) {
    LaunchPdl(GatherRowsKernel, dim3(static_cast<unsigned>(n), Blocks(cols, kThreads)), kThreads, 0, s, src, cols, rows,
              dst);
  }
}

void LaunchGatherColumns(const float* src, int64_t n, int64_t cols, const int32_t* order, float* dst, cudaStream_t s) {
  if (n > 0 && cols > 0) {
    LaunchPdl(GatherColumnsKernel, dim3(static_cast<unsigned>(n), Blocks(cols, kThreads)), kThreads, 0, s, src, cols,
              order, dst);
  }
}

}  // namespace llmhost::cuda
