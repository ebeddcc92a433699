#include "backend/cuda/common.cuh"
#include "backend/cuda/embedding.cuh"

namespace llmhost::cuda {
namespace {

template <Elem E>
__global__ void EmbeddingKernel(const void* w, int64_t cols, const int32_t* ids, float scale, float* out) {
  const int64_t i = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  out[i * cols + c] = Load<E>(w, static_cast<int64_t>(ids[i]) * cols + c) * scale;
}

}  // namespace

void LaunchEmbedding(Elem w_type, const void* w, int64_t cols, const int32_t* ids, int64_t n, float scale,
                     float* out, cudaStream_t s) {
  if (n <= 0) return;
  const dim3 grid(static_cast<unsigned>(n), Blocks(cols, 256));
  switch (w_type) {
    case Elem::kF32: EmbeddingKernel<Elem::kF32><<<grid, 256, 0, s>>>(w, cols, ids, scale, out); break;
    case Elem::kF16: EmbeddingKernel<Elem::kF16><<<grid, 256, 0, s>>>(w, cols, ids, scale, out); break;
    case Elem::kBF16: EmbeddingKernel<Elem::kBF16><<<grid, 256, 0, s>>>(w, cols, ids, scale, out); break;
  }
}

}  // namespace llmhost::cuda
