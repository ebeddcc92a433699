// AVX2 dequantization of row ranges (DequantizeRows), built on the decoders
// of quant_avx2_decode.h: the exact values of the scalar decoders.
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/quant_avx2_decode.h"

#if defined(__x86_64__)

namespace llmhost::cpu {
namespace {

using namespace avx2;  // NOLINT: the decoders

template <typename Dec>
AVX2_FN void DeqRange(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1, float* out) {
  const Dec dec(w);
  constexpr int kLanes = Dec::kStep / 8;
  __m256 v[kLanes];
  int64_t k = c0;
  for (; k + Dec::kStep <= c1; k += Dec::kStep) {
    dec.Load(row, k, v);
    for (int j = 0; j < kLanes; ++j) _mm256_storeu_ps(out + (k - c0) + 8 * j, v[j]);
  }
  if constexpr (Dec::kPlain) {
    if (k < c1) {
      alignas(32) float t[8];
      dec.LoadTail(row, k, c1 - k, v);
      _mm256_store_ps(t, v[0]);
      for (int64_t i = 0; i < c1 - k; ++i) out[k - c0 + i] = t[i];
    }
  }
}

struct Select {
  template <typename Dec>
  DequantRangeFn operator()(const Dec&) const { return DeqRange<Dec>; }
};

}  // namespace

DequantRangeFn SelectDequantAvx2(const WeightMatrix& w) { return avx2::WithDecoder(w, Select()); }

}  // namespace llmhost::cpu

#else  // not x86-64

namespace llmhost::cpu {
DequantRangeFn SelectDequantAvx2(const WeightMatrix&) { return nullptr; }
}  // namespace llmhost::cpu

#endif
