// TEMPORARY minimal reference implementation (F32/F16/BF16 only, naive loops)
// so that the model layer can be written while the real kernels are built.
// The kernels engineer REPLACES THIS FILE (delete it when matmul.h's functions
// are defined elsewhere).
#include <cstring>
#include <vector>

#include "backend/cpu/matmul.h"

namespace llmhost {

float Bf16ToF32(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float F16ToF32(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
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
  // Minimal: via _Float16 where the compiler has it.
  _Float16 h = static_cast<_Float16>(v);
  uint16_t out;
  std::memcpy(&out, &h, 2);
  return out;
}

Status CheckWeight(const WeightMatrix& w) {
  switch (w.format) {
    case WeightFormat::kF32:
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      return Status::OK();
    default:
      return Status::NotSupported("weight format not yet supported by the CPU kernels");
  }
}

void DequantizeRows(const WeightMatrix& w, int64_t r0, int64_t r1, float* out) {
  const int64_t n = (r1 - r0) * w.cols;
  const int64_t off = r0 * w.cols;
  switch (w.format) {
    case WeightFormat::kF32:
      std::memcpy(out, static_cast<const float*>(w.data) + off, n * sizeof(float));
      break;
    case WeightFormat::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = F16ToF32(static_cast<const uint16_t*>(w.data)[off + i]);
      break;
    case WeightFormat::kBF16:
      for (int64_t i = 0; i < n; ++i) out[i] = Bf16ToF32(static_cast<const uint16_t*>(w.data)[off + i]);
      break;
    default:
      std::memset(out, 0, n * sizeof(float));
  }
}

void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, MatMulPrecision, ThreadPool* pool) {
  auto body = [&](int64_t r0, int64_t r1) {
    std::vector<float> row(w.cols);
    for (int64_t r = r0; r < r1; ++r) {
      DequantizeRows(w, r, r + 1, row.data());
      for (int64_t t = 0; t < n; ++t) {
        const float* xt = x + t * w.cols;
        float acc = 0;
        for (int64_t c = 0; c < w.cols; ++c) acc += xt[c] * row[c];
        y[t * w.rows + r] = acc;
      }
    }
  };
  if (pool) {
    pool->ParallelFor(w.rows, 16, body);
  } else {
    body(0, w.rows);
  }
}

}  // namespace llmhost
