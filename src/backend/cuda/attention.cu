#include "backend/cuda/attention.cuh"
#include "backend/cuda/common.cuh"

namespace llmhost::cuda {
namespace {

constexpr int kWarps = 4;  // heads per block
constexpr int kPerLane = kMaxAttentionHeadDim / 32;

template <Elem E>
__global__ void AttentionKernel(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                                int64_t n_seqs, AttentionParams p, float* out) {
  const int lane = threadIdx.x & 31;
  const int64_t h = static_cast<int64_t>(blockIdx.y) * kWarps + (threadIdx.x >> 5);
  const int64_t row = blockIdx.x;
  if (h >= p.n_heads) return;
  int64_t s = 0;
  while (s + 1 < n_seqs && !(row >= seqs[s].q_row && row < seqs[s].q_row + seqs[s].n_new)) ++s;
  const AttentionSeq seq = seqs[s];
  if (row < seq.q_row || row >= seq.q_row + seq.n_new) return;  // a row no sequence has
  const int64_t d = p.head_dim, group = p.n_heads / p.n_kv_heads, kv_head = h / group;
  const int64_t kv_dim = p.n_kv_heads * d;
  const int64_t pos = seq.kv_len - seq.n_new + (row - seq.q_row);
  const int64_t lo = p.window > 0 && pos - p.window + 1 > 0 ? pos - p.window + 1 : 0;
  const float* qh = q + row * p.q_stride + h * d;
  float qv[kPerLane], acc[kPerLane];
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    const int64_t c = lane + 32 * m;
    qv[m] = c < d ? qh[c] : 0.0f;
    acc[m] = 0.0f;
  }
  float mx = -INFINITY, l = 0.0f;
  for (int64_t j = lo; j <= pos; ++j) {
    const int64_t slot = static_cast<int64_t>(seq.block_table[j / p.block_size]) * p.block_size + j % p.block_size;
    const int64_t base = slot * kv_dim + kv_head * d;
    float dot = 0.0f;
#pragma unroll
    for (int m = 0; m < kPerLane; ++m) {
      const int64_t c = lane + 32 * m;
      if (c < d) dot = fmaf(qv[m], Load<E>(k_cache, base + c), dot);
    }
    float sc = WarpSum(dot) * p.scale;
    if (p.softcap > 0) sc = p.softcap * tanhf(sc / p.softcap);
    const float nmx = fmaxf(mx, sc);
    const float corr = expf(mx - nmx), w = expf(sc - nmx);
    l = l * corr + w;
#pragma unroll
    for (int m = 0; m < kPerLane; ++m) {
      const int64_t c = lane + 32 * m;
      if (c < d) acc[m] = acc[m] * corr + w * Load<E>(v_cache, base + c);
    }
    mx = nmx;
  }
  float* oh = out + row * p.out_stride + h * d;
  const float inv = 1.0f / l;
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    const int64_t c = lane + 32 * m;
    if (c < d) oh[c] = acc[m] * inv;
  }
}

}  // namespace

void LaunchAttention(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                     int64_t n_seqs, const AttentionParams& p, float* out, cudaStream_t s) {
  if (p.n_rows <= 0 || n_seqs <= 0 || p.n_heads <= 0) return;
  const dim3 grid(static_cast<unsigned>(p.n_rows), Blocks(p.n_heads, kWarps));
  ForElem(ElemOf(p.kv_dtype), [&]<Elem E>() {
    AttentionKernel<E><<<grid, kWarps * 32, 0, s>>>(q, k_cache, v_cache, seqs, n_seqs, p, out);
  });
}

}  // namespace llmhost::cuda
