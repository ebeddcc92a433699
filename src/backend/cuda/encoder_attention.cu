#include <cfloat>

#include "backend/cuda/common.cuh"
#include "backend/cuda/encoder_attention.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

// The block's max / sum of v in a fixed order (the row's result never
// depends on the launch).
template <bool kMax>
__device__ float BlockReduce(float v, float* part) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xFFFFFFFFu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  if (lane == 0) part[warp] = v;
  __syncthreads();
  float total = part[0];
  for (int w = 1; w < kWarps; ++w) total = kMax ? fmaxf(total, part[w]) : total + part[w];
  __syncthreads();
  return total;
}

// One block per (query row, head): block x is the x-th row of the sequences
// taken in order (wherever their rows lie), found by a scan of seqs; its
// scores in shared memory, the softmax, then out column by column.
__global__ void __launch_bounds__(kThreads) EncoderAttentionKernel(const float* q, const float* k, const float* v,
                                                                    const EncoderSeq* seqs, int64_t n_seqs,
                                                                    EncoderAttentionParams p, float* out) {
  WaitForPriorGrid();
  extern __shared__ float smem[];
  __shared__ float part[kWarps];
  const int64_t h = blockIdx.y, d = p.head_dim;
  int64_t first = -1, len = 0, row = 0;
  for (int64_t s = 0, before = 0; s < n_seqs; before += seqs[s].len, ++s) {
    if (blockIdx.x < before + seqs[s].len) {
      first = seqs[s].row;
      len = seqs[s].len;
      row = first + (blockIdx.x - before);
      break;
    }
  }
  if (first < 0) return;  // past the sequences' rows
  float* qh = smem;
  float* scores = smem + d;
  for (int64_t c = threadIdx.x; c < d; c += kThreads) qh[c] = q[row * p.qkv_stride + h * d + c];
  __syncthreads();
  float local_max = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < len; j += kThreads) {
    const float* kj = k + (first + j) * p.qkv_stride + h * d;
    float dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += qh[c] * kj[c];
    if (p.relative) {
      const float* r = p.relative + (row - first - j + p.max_distance - 1) * d;
      for (int64_t c = 0; c < d; ++c) dot += qh[c] * r[c];
      if (p.relative_keys) {
        for (int64_t c = 0; c < d; ++c) dot += kj[c] * r[c];
      }
    }
    scores[j] = dot * p.scale;
    local_max = fmaxf(local_max, scores[j]);
  }
  const float max = BlockReduce<true>(local_max, part);
  float local_sum = 0;
  for (int64_t j = threadIdx.x; j < len; j += kThreads) {
    scores[j] = expf(scores[j] - max);
    local_sum += scores[j];
  }
  const float sum = BlockReduce<false>(local_sum, part);  // its barrier publishes scores
  for (int64_t c = threadIdx.x; c < d; c += kThreads) {
    float acc = 0;
    for (int64_t j = 0; j < len; ++j) acc += (scores[j] / sum) * v[(first + j) * p.qkv_stride + h * d + c];
    out[row * p.out_stride + h * d + c] = acc;
  }
}

}  // namespace

size_t EncoderAttentionSmemBytes(const EncoderAttentionParams& p) {
  return static_cast<size_t>(p.max_len + p.head_dim) * sizeof(float);
}

void LaunchEncoderAttention(const float* q, const float* k, const float* v, const EncoderSeq* seqs,
                            int64_t n_seqs, const EncoderAttentionParams& p, float* out, cudaStream_t s) {
  if (n_seqs <= 0 || p.n_rows <= 0 || p.n_heads <= 0) return;
  const size_t smem = EncoderAttentionSmemBytes(p);
  if (smem > 48 * 1024) {
    cudaFuncSetAttribute(EncoderAttentionKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  }
  const dim3 grid(static_cast<unsigned>(p.n_rows), static_cast<unsigned>(p.n_heads));
  LaunchPdl(EncoderAttentionKernel, grid, kThreads, smem, s, q, k, v, seqs, n_seqs, p, out);
}

}  // namespace llmhost::cuda
