// Scalar float conversions, row geometry, and the exact scalar dequantizer
// that dispatches over every format.
#include <cstring>

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

namespace quant {

int64_t DequantAlignment(const WeightMatrix& w) {
  switch (w.format) {
    case WeightFormat::kMlxAffine: return 32;  // every group size is a multiple
    case WeightFormat::kGgml: return GgmlBlockSize(w.ggml_type);
    default: return 1;
  }
}

int64_t RowBytes(const WeightMatrix& w) {
  switch (w.format) {
    case WeightFormat::kF32: return w.cols * 4;
    case WeightFormat::kF16:
    case WeightFormat::kBF16: return w.cols * 2;
    case WeightFormat::kMlxAffine: return w.cols * w.bits / 8;
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
