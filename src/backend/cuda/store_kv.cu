#include "backend/cuda/common.cuh"
#include "backend/cuda/store_kv.cuh"

namespace llmhost::cuda {
namespace {

template <Elem E>
__global__ void StoreKvKernel(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t kv_dim,
                              const int32_t* slots, void* k_cache, void* v_cache) {
  WaitForPriorGrid();
  const int64_t i = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= kv_dim) return;
  const int64_t at = static_cast<int64_t>(slots[i]) * kv_dim + c;
  StoreElem<E>(k_cache, at, k[i * k_stride + c]);
  StoreElem<E>(v_cache, at, v[i * v_stride + c]);
}

}  // namespace

void LaunchStoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n, int64_t kv_dim,
                   const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype, cudaStream_t s) {
  if (n <= 0 || kv_dim <= 0) return;
  const dim3 grid(static_cast<unsigned>(n), Blocks(kv_dim, 256));
  ForElem(ElemOf(kv_dtype), [&]<Elem E>() {
    LaunchPdl(StoreKvKernel<E>, grid, 256, 0, s, k, k_stride, v, v_stride, kv_dim, slots, k_cache, v_cache);
  });
}

}  // namespace llmhost::cuda
