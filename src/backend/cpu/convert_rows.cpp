#include "backend/cpu/convert_rows.h"

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"

namespace llmhost::cpu {

void FloatsToHalves(const float* in, uint16_t* out, int64_t n, DType t) {
#if defined(__x86_64__)
  if (ActiveCpuIsa() >= CpuIsa::kAvx2) return internal::FloatsToHalvesAvx2(in, out, n, t);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = t == DType::kBF16 ? F32ToBf16(in[i]) : F32ToF16(in[i]);
}

void HalvesToFloats(const uint16_t* in, float* out, int64_t n, DType t) {
#if defined(__x86_64__)
  if (ActiveCpuIsa() >= CpuIsa::kAvx2) return internal::HalvesToFloatsAvx2(in, out, n, t);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = t == DType::kBF16 ? Bf16ToF32(in[i]) : F16ToF32(in[i]);
}

}  // namespace llmhost::cpu
