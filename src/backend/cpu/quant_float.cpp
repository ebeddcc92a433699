// Scalar float conversions, row geometry, and the exact scalar dequantizer
// that dispatches over every format.
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/matmul.h"
#include "backend/cpu/quant_formats.h"

namespace llmhost {

float Bf16ToF32(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t F32ToBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t F32ToF16(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7FFFFFFF;
  if (ax > 0x7F800000) return sign | 0x7E00;                       // NaN
  if (ax >= 0x477FF000) return sign | 0x7C00;                      // rounds to >= 65520: inf
  if (ax >= 0x38800000) {                                          // normal half
    const uint32_t mant = ax & 0x7FFFFF;
    uint32_t h = ((ax >> 23) - 127 + 15) << 10 | (mant >> 13);
    const uint32_t rest = mant & 0x1FFF;                           // 13 dropped bits
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;         // carries into exp: fine
    return sign | static_cast<uint16_t>(h);
  }
  if (ax < 0x33000000) return sign;                                // below half the min subnormal
  // Subnormal half: value = m * 2^-24, m = round(|v| * 2^24).
  const int e = static_cast<int>(ax >> 23);                        // 102..112
  const uint32_t mant = (ax & 0x7FFFFF) | 0x800000;                // 24 bits
  const int shift = 126 - e;                                       // 14..24
  uint32_t m = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (m & 1))) ++m;
  return sign | static_cast<uint16_t>(m);
}

float Fp8E4M3ToF32(uint8_t v) {
  const int e = (v >> 3) & 0xF, m = v & 7;
  float a;
  if ((v & 0x7F) == 0x7F) {
    a = std::numeric_limits<float>::quiet_NaN();
  } else if (e == 0) {
    a = std::ldexp(static_cast<float>(m), -9);  // subnormal: m/8 * 2^-6
  } else {
    a = std::ldexp(static_cast<float>(8 + m), e - 10);  // (1 + m/8) * 2^(e-7)
  }
  return (v & 0x80) ? -a : a;
}

uint8_t F32ToFp8E4M3(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  const uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7F;                     // NaN
  if (ax >= 0x43E80000u) return sign | 0x7E;                    // >= 464, the midpoint of 448 and 480 (NaN): saturate
  if (ax < 0x3C800000u) {                                       // below 2^-6: subnormal steps of 2^-9
    float a;
    std::memcpy(&a, &ax, 4);
    return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));  // exact product; 8 is the smallest normal
  }
  // Normal: keep 3 of the 23 mantissa bits, rounding the other 20 to nearest
  // even (a carry moves into the exponent); rebias 127 -> 7.
  const uint32_t r = ax + 0x7FFFFu + ((ax >> 20) & 1u);
  return sign | static_cast<uint8_t>((((r >> 23) - 120u) << 3) | ((r >> 20) & 7u));
}

namespace quant {

int64_t DequantAlignment(const WeightMatrix& w) {
  switch (w.format) {
    case WeightFormat::kMlxAffine: return 32;  // every group size is a multiple
    case WeightFormat::kGgml: return GgmlBlockSize(w.ggml_type);
    case WeightFormat::kFp8E4M3: return 32;  // groups are whole multiples
    default: return 1;
  }
}

int64_t RowBytes(const WeightMatrix& w) {
  switch (w.format) {
    case WeightFormat::kF32: return w.cols * 4;
    case WeightFormat::kF16:
    case WeightFormat::kBF16: return w.cols * 2;
    case WeightFormat::kMlxAffine: return w.cols * w.bits / 8;
    case WeightFormat::kFp8E4M3: return w.cols;
    case WeightFormat::kGgml: {
      const int size = GgmlBlockSize(w.ggml_type);
      return size ? w.cols / size * GgmlBlockBytes(w.ggml_type) : 0;
    }
  }
  return 0;
}

void DequantizeRangeScalar(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1,
                           float* out) {
  const uint8_t* base = static_cast<const uint8_t*>(w.data) + row * RowBytes(w);
  switch (w.format) {
    case WeightFormat::kF32:
      std::memcpy(out, base + 4 * c0, (c1 - c0) * sizeof(float));
      return;
    case WeightFormat::kF16:
      for (int64_t c = c0; c < c1; ++c) out[c - c0] = F16ToF32(LoadU16(base + 2 * c));
      return;
    case WeightFormat::kBF16:
      for (int64_t c = c0; c < c1; ++c) out[c - c0] = Bf16ToF32(LoadU16(base + 2 * c));
      return;
    case WeightFormat::kMlxAffine:
      DequantizeMlxRangeScalar(w, row, c0, c1, out);
      return;
    case WeightFormat::kFp8E4M3: {
      const float* scales = static_cast<const float*>(w.scales) + row * (w.cols / w.group_size);
      for (int64_t c = c0; c < c1; ++c) out[c - c0] = scales[c / w.group_size] * Fp8E4M3ToF32(base[c]);
      return;
    }
    case WeightFormat::kGgml: {
      const int size = GgmlBlockSize(w.ggml_type);
      const int bytes = GgmlBlockBytes(w.ggml_type);
      DequantizeGgmlBlocksScalar(w.ggml_type, base + c0 / size * bytes, (c1 - c0) / size, out);
      return;
    }
  }
}

}  // namespace quant
}  // namespace llmhost
