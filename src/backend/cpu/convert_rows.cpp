#include "backend/cpu/convert_rows.h"

#include <array>
#include <cstring>

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

namespace {

const std::array<float, 256>& Fp8Table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> v{};
    for (int c = 0; c < 256; ++c) v[static_cast<size_t>(c)] = Fp8E4M3ToF32(static_cast<uint8_t>(c));
    return v;
  }();
  return t;
}

}  // namespace

void FloatsToKv(const float* in, void* cache, int64_t offset, int64_t n, DType t) {
  switch (t) {
    case DType::kF32:
      std::memcpy(static_cast<float*>(cache) + offset, in, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF8_E4M3: {
      uint8_t* out = static_cast<uint8_t*>(cache) + offset;
      for (int64_t i = 0; i < n; ++i) out[i] = F32ToFp8E4M3(in[i]);
      return;
    }
    default:
      FloatsToHalves(in, static_cast<uint16_t*>(cache) + offset, n, t);
  }
}

void KvToFloats(const void* cache, int64_t offset, float* out, int64_t n, DType t) {
  switch (t) {
    case DType::kF32:
      std::memcpy(out, static_cast<const float*>(cache) + offset, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF8_E4M3: {
      const uint8_t* in = static_cast<const uint8_t*>(cache) + offset;
      const std::array<float, 256>& table = Fp8Table();
      for (int64_t i = 0; i < n; ++i) out[i] = table[in[i]];
      return;
    }
    default:
      HalvesToFloats(static_cast<const uint16_t*>(cache) + offset, out, n, t);
  }
}

}  // namespace llmhost::cpu
