#include "backend/cuda/common.cuh"
#include "backend/cuda/rope.cuh"

namespace llmhost::cuda {
namespace {

// grid (ceil(heads * half / 256), n_tokens): one thread per rotated pair.
__global__ void RopeKernel(float* x, const int32_t* positions, const float* inv_freq, int64_t table_stride,
                           const int32_t* table_of, int64_t n_heads, int64_t head_dim, int64_t half,
                           int64_t row_stride, float scaling, bool interleaved) {
  WaitForPriorGrid();
  const int64_t t = blockIdx.x;
  const int64_t k = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (k >= n_heads * half) return;
  const int64_t h = k / half, i = k % half;
  const float* f = table_of ? inv_freq + table_of[t] * table_stride : inv_freq;
  const float angle = f[i] * static_cast<float>(positions[t]);
  const float c = static_cast<float>(cos(static_cast<double>(angle))) * scaling;
  const float sn = static_cast<float>(sin(static_cast<double>(angle))) * scaling;
  float* v = x + t * row_stride + h * head_dim;
  if (interleaved) {
    const float a = v[2 * i], b = v[2 * i + 1];
    v[2 * i] = a * c - b * sn;
    v[2 * i + 1] = a * sn + b * c;
  } else {
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * sn;
    v[i + half] = b * c + a * sn;
  }
}

}  // namespace

void LaunchRope(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                int64_t table_stride, const int32_t* table_of, const RopeParams& p, cudaStream_t s) {
  const int64_t half = p.rot_dim / 2;
  if (n_tokens <= 0 || half <= 0 || p.n_heads <= 0) return;
  const dim3 grid(static_cast<unsigned>(n_tokens), Blocks(p.n_heads * half, 256));
  LaunchPdl(RopeKernel, grid, 256, 0, s, x, positions, inv_freq, table_stride, table_of, p.n_heads, p.head_dim, half,
            p.row_stride, p.attention_scaling, p.pairing == RopePairing::kInterleaved);
}

}  // namespace llmhost::cuda
