// Exact scalar dequantization of ggml block types (layouts in quant_formats.h).
// Every value is computed in f32 in the order ggml's dequantize_row_* uses.
#include "backend/cpu/matmul.h"
#include "backend/cpu/quant_formats.h"

namespace llmhost::quant {
namespace {

float Half(const uint8_t* p) { return F16ToF32(LoadU16(p)); }

void Q4_0(const uint8_t* b, float* y) {
  const float d = Half(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

void Q4_1(const uint8_t* b, float* y) {
  const float d = Half(b), m = Half(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

void Q5_0(const uint8_t* b, float* y) {
  const float d = Half(b);
  const uint32_t qh = LoadU32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    y[j] = static_cast<float>(lo - 16) * d;
    y[j + 16] = static_cast<float>(hi - 16) * d;
  }
}

void Q5_1(const uint8_t* b, float* y) {
  const float d = Half(b), m = Half(b + 2);
  const uint32_t qh = LoadU32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    y[j] = static_cast<float>(lo) * d + m;
    y[j + 16] = static_cast<float>(hi) * d + m;
  }
}

void Q8_0(const uint8_t* b, float* y) {
  const float d = Half(b);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(qs[j]) * d;
}

// Q4_K and Q5_K (qh null for Q4_K).
void QK45(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = Half(b), dmin = Half(b + 2);
  const uint8_t* scales = b + 4;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    GetScaleMinK4(j, scales, &sc, &m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    const uint8_t* q = qs + 32 * (j / 2);
    const int shift = 4 * (j & 1);
    for (int l = 0; l < 32; ++l) {
      int v = (q[l] >> shift) & 0x0F;
      if (qh) v += ((qh[l] >> j) & 1) << 4;
      y[32 * j + l] = d1 * static_cast<float>(v) - m1;
    }
  }
}

void Q6_K(const uint8_t* b, float* y) {
  const float d = Half(b + 208);
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* sc = scales + 8 * h;
    for (int l = 0; l < 32; ++l) {
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      const int is = l / 16;
      y[128 * h + l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[128 * h + l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[128 * h + l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[128 * h + l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

void Q8_K(const uint8_t* b, float* y) {
  const float d = LoadF32(b);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 4);
  for (int j = 0; j < 256; ++j) y[j] = d * static_cast<float>(qs[j]);
}

}  // namespace

int GgmlBlockSize(GgmlType t) {
  switch (t) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
      return 1;
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0:
      return 32;
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
    case GgmlType::kQ8_K:
      return 256;
    default:
      return 0;
  }
}

int GgmlBlockBytes(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return 4;
    case GgmlType::kF16: return 2;
    case GgmlType::kBF16: return 2;
    case GgmlType::kQ4_0: return 18;
    case GgmlType::kQ4_1: return 20;
    case GgmlType::kQ5_0: return 22;
    case GgmlType::kQ5_1: return 24;
    case GgmlType::kQ8_0: return 34;
    case GgmlType::kQ4_K: return 144;
    case GgmlType::kQ5_K: return 176;
    case GgmlType::kQ6_K: return 210;
    case GgmlType::kQ8_K: return 292;
    default: return 0;
  }
}

void DequantizeGgmlBlocksScalar(GgmlType t, const uint8_t* blocks, int64_t n_blocks, float* out) {
  const int bytes = GgmlBlockBytes(t);
  const int size = GgmlBlockSize(t);
  for (int64_t i = 0; i < n_blocks; ++i) {
    const uint8_t* b = blocks + i * bytes;
    float* y = out + i * size;
    switch (t) {
      case GgmlType::kQ4_0: Q4_0(b, y); break;
      case GgmlType::kQ4_1: Q4_1(b, y); break;
      case GgmlType::kQ5_0: Q5_0(b, y); break;
      case GgmlType::kQ5_1: Q5_1(b, y); break;
      case GgmlType::kQ8_0: Q8_0(b, y); break;
      case GgmlType::kQ4_K: QK45(b, nullptr, b + 16, y); break;
      case GgmlType::kQ5_K: QK45(b, b + 16, b + 48, y); break;
      case GgmlType::kQ6_K: Q6_K(b, y); break;
      case GgmlType::kQ8_K: Q8_K(b, y); break;
      case GgmlType::kF32: *y = LoadF32(b); break;
      case GgmlType::kF16: *y = F16ToF32(LoadU16(b)); break;
      case GgmlType::kBF16: *y = Bf16ToF32(LoadU16(b)); break;
      default: *y = 0; break;  // unreachable after CheckWeight
    }
  }
}

}  // namespace llmhost::quant
