// Exact scalar dequantization of MLX affine-quantized rows (packing described
// in quant_formats.h): w = scale * q + bias, two f32 roundings.
#include "backend/cpu/matmul.h"
#include "backend/cpu/quant_formats.h"

namespace llmhost::quant {

float MlxParam(const WeightMatrix& w, const void* params, int64_t index) {
  const uint8_t* p = static_cast<const uint8_t*>(params);
  switch (w.scale_dtype) {
    case DType::kF32: return LoadF32(p + 4 * index);
    case DType::kF16: return F16ToF32(LoadU16(p + 2 * index));
    default: return Bf16ToF32(LoadU16(p + 2 * index));
  }
}

void DequantizeMlxRangeScalar(const WeightMatrix& w, int64_t row, int64_t c0, int64_t c1,
                              float* out) {
  const int bits = w.bits;
  const uint32_t mask = (1u << bits) - 1;
  const uint8_t* bytes = static_cast<const uint8_t*>(w.data) + row * RowBytes(w);
  const int64_t groups = w.cols / w.group_size;
  float scale = 0, bias = 0;
  for (int64_t c = c0; c < c1; ++c) {
    if (c == c0 || c % w.group_size == 0) {
      const int64_t g = row * groups + c / w.group_size;
      scale = MlxParam(w, w.scales, g);
      bias = MlxParam(w, w.biases, g);
    }
    const int64_t bit = c * bits;
    const int shift = static_cast<int>(bit & 7);
    uint32_t v = bytes[bit >> 3];
    if (shift + bits > 8) v |= static_cast<uint32_t>(bytes[(bit >> 3) + 1]) << 8;
    const float q = static_cast<float>((v >> shift) & mask);
    const float scaled = Rounded(scale * q);  // rounded to f32 before the add
    out[c - c0] = scaled + bias;
  }
}

}  // namespace llmhost::quant
