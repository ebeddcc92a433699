#include "backend/cuda/common.cuh"
#include "backend/cuda/embedding.cuh"
#include "backend/cuda/weight_load.cuh"

namespace llmhost::cuda {
namespace {

template <WFmt F>
__global__ void EmbeddingKernel(DevWeight w, const int32_t* ids, float scale, int64_t first_id, float* out) {
  WaitForPriorGrid();
  const int64_t i = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= w.cols) return;
  const int64_t r = ids[i] - first_id;
  out[i * w.cols + c] = r >= 0 && r < w.rows ? LoadW<F>(w, r, c) * scale : 0.0f;
}

}  // namespace

void LaunchEmbedding(const DevWeight& w, const int32_t* ids, int64_t n, float scale, float* out, int64_t first_id,
                     cudaStream_t s) {
  if (n <= 0) return;
  const dim3 grid(static_cast<unsigned>(n), Blocks(w.cols, 256));
  ForFormat(w.fmt, [&]<WFmt F>() { LaunchPdl(EmbeddingKernel<F>, grid, 256, 0, s, w, ids, scale, first_id, out); });
}

}  // namespace llmhost::cuda
