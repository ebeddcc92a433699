#include "backend/cuda/common.cuh"
#include "backend/cuda/rope.cuh"

namespace llmhost::cuda {
namespace {

// Pair i of a head v (rot_dim / 2 = half pairs) rotated by position * f:
// cos and sin in f64, rounded, times the scaling. Every RoPE kernel goes
// through this, so fused and plain launches give the same bits.
__device__ __forceinline__ void RotatePair(float* v, int64_t i, int64_t half, float f, int32_t position, float scaling,
                                           bool interleaved, int64_t* ia, int64_t* ib) {
  const float angle = f * static_cast<float>(position);
  const float c = static_cast<float>(cos(static_cast<double>(angle))) * scaling;
  const float sn = static_cast<float>(sin(static_cast<double>(angle))) * scaling;
  if (interleaved) {
    const float a = v[2 * i], b = v[2 * i + 1];
    v[2 * i] = a * c - b * sn;
    v[2 * i + 1] = a * sn + b * c;
    *ia = 2 * i, *ib = 2 * i + 1;
  } else {
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * sn;
    v[i + half] = b * c + a * sn;
    *ia = i, *ib = i + half;
  }
}

// grid (n_tokens, ceil(heads * half / 256)): one thread per rotated pair.
__global__ void RopeKernel(float* x, const int32_t* positions, const float* inv_freq, int64_t table_stride,
                           const int32_t* table_of, int64_t n_heads, int64_t head_dim, int64_t half,
                           int64_t row_stride, float scaling, bool interleaved) {
  WaitForPriorGrid();
  const int64_t t = blockIdx.x;
  const int64_t k = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (k >= n_heads * half) return;
  const int64_t h = k / half, i = k % half;
  const float* f = table_of ? inv_freq + table_of[t] * table_stride : inv_freq;
  int64_t ia, ib;
  RotatePair(x + t * row_stride + h * head_dim, i, half, f[i], positions[t], scaling, interleaved, &ia, &ib);
}

struct RopeStoreArgs {
  float* q;
  int64_t q_heads, q_stride;
  float* k;
  int64_t kv_heads, k_stride;
  const float* v;
  int64_t v_stride;
  int64_t head_dim, half, kv_dim;
  float scaling;
  bool interleaved;
  const int32_t* positions;
  const float* inv_freq;
  const int32_t* slots;
  void* k_cache;
  void* v_cache;
};

// grid (n_tokens, ceil(items / 256)), a token's items in four ranges: q's
// pairs, k's pairs (rotated, written back and stored), k's columns past
// rot_dim (stored as they are), v's columns (stored): RopeKernel twice and
// StoreKvKernel in one launch, each element computed as they compute it.
template <Elem E>
__global__ void RopeStoreKvKernel(RopeStoreArgs a) {
  WaitForPriorGrid();
  const int64_t t = blockIdx.x;
  int64_t j = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t at = static_cast<int64_t>(a.slots[t]) * a.kv_dim;
  const int64_t q_pairs = a.q_heads * a.half, k_pairs = a.kv_heads * a.half, pass = a.head_dim - 2 * a.half;
  if (j < q_pairs) {
    int64_t ia, ib;
    RotatePair(a.q + t * a.q_stride + (j / a.half) * a.head_dim, j % a.half, a.half, a.inv_freq[j % a.half],
               a.positions[t], a.scaling, a.interleaved, &ia, &ib);
    return;
  }
  j -= q_pairs;
  if (j < k_pairs) {
    const int64_t h = j / a.half, i = j % a.half;
    float* kv = a.k + t * a.k_stride + h * a.head_dim;
    int64_t ia, ib;
    RotatePair(kv, i, a.half, a.inv_freq[i], a.positions[t], a.scaling, a.interleaved, &ia, &ib);
    StoreElem<E>(a.k_cache, at + h * a.head_dim + ia, kv[ia]);
    StoreElem<E>(a.k_cache, at + h * a.head_dim + ib, kv[ib]);
    return;
  }
  j -= k_pairs;
  if (j < a.kv_heads * pass) {
    const int64_t c = (j / pass) * a.head_dim + 2 * a.half + j % pass;
    StoreElem<E>(a.k_cache, at + c, a.k[t * a.k_stride + c]);
    return;
  }
  j -= a.kv_heads * pass;
  if (j < a.kv_dim) StoreElem<E>(a.v_cache, at + j, a.v[t * a.v_stride + j]);
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

bool LaunchRopeStoreKv(float* q, const RopeParams& rq, float* k, const RopeParams& rk, const float* v,
                       int64_t v_stride, int64_t n, const int32_t* positions, const float* inv_freq, int64_t kv_dim,
                       const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype, cudaStream_t s) {
  // One launch where q and k are heads of one shape and k's rows are kv_dim wide.
  if (rq.head_dim != rk.head_dim || rq.rot_dim != rk.rot_dim || rq.pairing != rk.pairing ||
      rq.attention_scaling != rk.attention_scaling || rk.n_heads * rk.head_dim != kv_dim) {
    return false;
  }
  if (n <= 0) return true;
  RopeStoreArgs a;
  a.q = q, a.q_heads = rq.n_heads, a.q_stride = rq.row_stride;
  a.k = k, a.kv_heads = rk.n_heads, a.k_stride = rk.row_stride;
  a.v = v, a.v_stride = v_stride;
  a.head_dim = rk.head_dim, a.half = rk.rot_dim / 2, a.kv_dim = kv_dim;
  a.scaling = rk.attention_scaling;
  a.interleaved = rk.pairing == RopePairing::kInterleaved;
  a.positions = positions, a.inv_freq = inv_freq, a.slots = slots;
  a.k_cache = k_cache, a.v_cache = v_cache;
  const int64_t items = (a.q_heads + a.kv_heads) * a.half + a.kv_heads * (a.head_dim - 2 * a.half) + kv_dim;
  const dim3 grid(static_cast<unsigned>(n), Blocks(items, 256));
  ForElem(ElemOf(kv_dtype), [&]<Elem E>() { LaunchPdl(RopeStoreKvKernel<E>, grid, 256, 0, s, a); });
  return true;
}

}  // namespace llmhost::cuda
