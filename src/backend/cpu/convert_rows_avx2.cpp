// AVX2 + F16C bodies of convert_rows.h; called only when the CPU has them.
#include "backend/cpu/convert_rows.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "backend/cpu/matmul.h"

#define LLMHOST_CVT_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace llmhost::cpu::internal {

LLMHOST_CVT_AVX2 void FloatsToHalvesAvx2(const float* in, uint16_t* out, int64_t n, DType t) {
  int64_t i = 0;
  if (t == DType::kF16) {
    for (; i + 8 <= n; i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; ++i) out[i] = F32ToF16(in[i]);
    return;
  }
  // bf16: bits + 0x7FFF + (bit 16), keeping NaN quiet (as F32ToBf16).
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
  const __m256i bias = _mm256_set1_epi32(0x7FFF), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x400000);
  for (; i + 16 <= n; i += 16) {
    __m256i r[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(in + i + 8 * h));
      const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
      const __m256i rounded =
          _mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(x, 16), one)));
      r[h] = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, _mm256_or_si256(x, quiet), nan), 16);
    }
    // Pack the two 8 x u32 halves to 16 x u16 in order (packus works per 128-bit lane).
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  for (; i < n; ++i) out[i] = F32ToBf16(in[i]);
}

LLMHOST_CVT_AVX2 void HalvesToFloatsAvx2(const uint16_t* in, float* out, int64_t n, DType t) {
  int64_t i = 0;
  if (t == DType::kF16) {
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
    }
    for (; i < n; ++i) out[i] = F16ToF32(in[i]);
    return;
  }
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) out[i] = Bf16ToF32(in[i]);
}

}  // namespace llmhost::cpu::internal
#endif
