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
  const float kv = k[i * k_stride + c], vv = v[i * v_stride + c];
  if constexpr (E == Elem::kF32) {
    static_cast<float*>(k_cache)[at] = kv;
    static_cast<float*>(v_cache)[at] = vv;
  } else if constexpr (E == Elem::kBF16) {
    static_cast<uint16_t*>(k_cache)[at] = F32ToBf16Bits(kv);
    static_cast<uint16_t*>(v_cache)[at] = F32ToBf16Bits(vv);
  } else if constexpr (E == Elem::kF8) {
    static_cast<uint8_t*>(k_cache)[at] = F32ToFp8Bits(kv);
    static_cast<uint8_t*>(v_cache)[at] = F32ToFp8Bits(vv);
  } else {
    static_cast<uint16_t*>(k_cache)[at] = F32ToF16Bits(kv);
    static_cast<uint16_t*>(v_cache)[at] = F32ToF16Bits(vv);
  }
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
