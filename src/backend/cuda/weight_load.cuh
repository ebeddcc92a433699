// Element (r, c) of a stored weight, dequantized on the fly with the CPU
// reference's exact f32 arithmetic (products and sums rounded as the host
// rounds them: no fused multiply-add), so that a kernel reading packed
// weights computes with the same values as one reading them expanded.
#pragma once

#include "backend/cuda/common.cuh"

namespace llmhost::cuda {

__device__ __forceinline__ float ScaleAt(const void* p, Elem t, int64_t i) {
  return t == Elem::kF32 ? Load<Elem::kF32>(p, i) : t == Elem::kF16 ? Load<Elem::kF16>(p, i) : Load<Elem::kBF16>(p, i);
}

__device__ __forceinline__ float HalfAt(const uint8_t* b) {
  return F16ToF32(static_cast<uint16_t>(b[0] | (b[1] << 8)));
}

template <WFmt F>
__device__ __forceinline__ float LoadW(const DevWeight& w, int64_t r, int64_t c) {
  if constexpr (F == WFmt::kF32) {
    return Load<Elem::kF32>(w.data, r * w.cols + c);
  } else if constexpr (F == WFmt::kF16) {
    return Load<Elem::kF16>(w.data, r * w.cols + c);
  } else if constexpr (F == WFmt::kBF16) {
    return Load<Elem::kBF16>(w.data, r * w.cols + c);
  } else if constexpr (F == WFmt::kMlx) {
    // One little-endian bit stream per row; value c in bits [c*bits, (c+1)*bits).
    const uint8_t* row = static_cast<const uint8_t*>(w.data) + r * w.row_bytes;
    const int64_t bit = c * w.bits;
    const int shift = static_cast<int>(bit & 7);
    uint32_t v = row[bit >> 3];
    if (shift + w.bits > 8) v |= static_cast<uint32_t>(row[(bit >> 3) + 1]) << 8;
    const float q = static_cast<float>((v >> shift) & ((1u << w.bits) - 1));
    const int64_t g = r * (w.cols / w.group_size) + c / w.group_size;
    return __fadd_rn(__fmul_rn(ScaleAt(w.scales, w.scale_type, g), q), ScaleAt(w.biases, w.scale_type, g));
  } else if constexpr (F == WFmt::kFp8) {  // f32 scale per group of the row, one rounding
    const uint8_t code = static_cast<const uint8_t*>(w.data)[r * w.cols + c];
    const float scale = static_cast<const float*>(w.scales)[r * (w.cols / w.group_size) + c / w.group_size];
    return __fmul_rn(scale, Fp8E4M3ToF32(code));
  } else if constexpr (F == WFmt::kQ8_0) {  // 34 bytes: f16 d, int8 q[32]
    const uint8_t* b = static_cast<const uint8_t*>(w.data) + r * w.row_bytes + (c / 32) * 34;
    return __fmul_rn(static_cast<float>(static_cast<int8_t>(b[2 + c % 32])), HalfAt(b));
  } else if constexpr (F == WFmt::kQ4_0) {  // 18 bytes: f16 d, q[16] (low nibbles: 0..15, high: 16..31)
    const uint8_t* b = static_cast<const uint8_t*>(w.data) + r * w.row_bytes + (c / 32) * 18;
    const int j = static_cast<int>(c % 32);
    const int q = j < 16 ? (b[2 + j] & 0x0F) : (b[2 + j - 16] >> 4);
    return __fmul_rn(static_cast<float>(q - 8), HalfAt(b));
  } else if constexpr (F == WFmt::kQ4_K) {  // 144 bytes: d, dmin, scales[12], qs[128]
    const uint8_t* b = static_cast<const uint8_t*>(w.data) + r * w.row_bytes + (c / 256) * 144;
    const int i = static_cast<int>(c % 256), j = i / 32, l = i % 32;
    const uint8_t* s = b + 4;
    int sc, m;
    if (j < 4) {
      sc = s[j] & 63;
      m = s[j + 4] & 63;
    } else {
      sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
      m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
    const float d1 = __fmul_rn(HalfAt(b), static_cast<float>(sc));
    const float m1 = __fmul_rn(HalfAt(b + 2), static_cast<float>(m));
    const int v = (b[16 + 32 * (j / 2) + l] >> (4 * (j & 1))) & 0x0F;
    return __fsub_rn(__fmul_rn(d1, static_cast<float>(v)), m1);
  } else {  // kQ6_K, 210 bytes: ql[128], qh[64], int8 scales[16], f16 d
    const uint8_t* b = static_cast<const uint8_t*>(w.data) + r * w.row_bytes + (c / 256) * 210;
    const int i = static_cast<int>(c % 256), h = i / 128, quarter = (i % 128) / 32, l = i % 32;
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192) + 8 * h;
    const uint8_t low = ql[l + 32 * (quarter & 1)];
    const int lo4 = quarter < 2 ? (low & 0x0F) : (low >> 4);
    const int q = (lo4 | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
    return __fmul_rn(__fmul_rn(HalfAt(b + 208), static_cast<float>(sc[l / 16 + 2 * quarter])), static_cast<float>(q));
  }
}

// Eight consecutive weights of row r from column c (a multiple of 8) with
// LoadW's values, in wide loads where the format allows: 16/32-bit rows in
// 16-byte loads, MLX 4- and 8-bit in one 4- or 8-byte word (one group: its
// size is a multiple of 8; WideRows says when), FP8 in one 8-byte word, GGUF Q8_0 / Q4_0 in 16-bit
// loads. Rows start 16-byte aligned: each weight is its own allocation and
// cols is a multiple of 8.
template <WFmt F>
__device__ __forceinline__ void LoadW8(const DevWeight& w, int64_t r, int64_t c, float (&out)[8]) {
  if constexpr (F == WFmt::kF32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(w.data) + r * w.cols + c);
    const float4 a = __ldg(p), b = __ldg(p + 1);
    out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
    out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
  } else if constexpr (F == WFmt::kF16 || F == WFmt::kBF16) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(w.data) + r * w.cols + c));
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint16_t lo = static_cast<uint16_t>(words[k] & 0xFFFFu), hi = static_cast<uint16_t>(words[k] >> 16);
      out[2 * k] = F == WFmt::kBF16 ? Bf16ToF32(lo) : F16ToF32(lo);
      out[2 * k + 1] = F == WFmt::kBF16 ? Bf16ToF32(hi) : F16ToF32(hi);
    }
  } else if constexpr (F == WFmt::kMlx) {
    const uint8_t* row = static_cast<const uint8_t*>(w.data) + r * w.row_bytes;
    const int64_t g = r * (w.cols / w.group_size) + c / w.group_size;
    const float scale = ScaleAt(w.scales, w.scale_type, g), bias = ScaleAt(w.biases, w.scale_type, g);
    if (w.bits == 4) {
      const uint32_t v = __ldg(reinterpret_cast<const uint32_t*>(row + c / 2));
#pragma unroll
      for (int j = 0; j < 8; ++j) out[j] = __fadd_rn(__fmul_rn(scale, static_cast<float>((v >> (4 * j)) & 15u)), bias);
    } else if (w.bits == 8) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(row + c));
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const uint32_t word = j < 4 ? v.x : v.y;
        out[j] = __fadd_rn(__fmul_rn(scale, static_cast<float>((word >> (8 * (j & 3))) & 255u)), bias);
      }
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) out[j] = LoadW<F>(w, r, c + j);
    }
  } else if constexpr (F == WFmt::kFp8) {
    // One 8-byte load; the 8 columns lie in one group (its size is a multiple of 8).
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(w.data) + r * w.cols + c));
    const float scale = __ldg(static_cast<const float*>(w.scales) + r * (w.cols / w.group_size) + c / w.group_size);
#pragma unroll
    for (int j = 0; j < 8; ++j) out[j] = __fmul_rn(scale, Fp8E4M3ToF32(((j < 4 ? v.x : v.y) >> (8 * (j & 3))) & 0xFFu));
  } else if constexpr (F == WFmt::kQ8_0 || F == WFmt::kQ4_0) {
    // Blocks of 32 (34 / 18 bytes: f16 d, then the quants) start at even
    // offsets: the chunk's 8 bytes are four 16-bit loads.
    constexpr int kBlock = F == WFmt::kQ8_0 ? 34 : 18;
    const uint8_t* b = static_cast<const uint8_t*>(w.data) + r * w.row_bytes + (c / 32) * kBlock;
    const int j0 = static_cast<int>(c % 32);
    const float d = F16ToF32(*reinterpret_cast<const uint16_t*>(b));
    const uint16_t* q = reinterpret_cast<const uint16_t*>(b + 2 + (F == WFmt::kQ8_0 ? j0 : j0 % 16));
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint16_t pair = q[k];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t byte = (pair >> (8 * h)) & 0xFFu;
        float v;
        if constexpr (F == WFmt::kQ8_0) {
          v = static_cast<float>(static_cast<int8_t>(byte));
        } else {
          v = static_cast<float>(static_cast<int>(j0 < 16 ? (byte & 0x0Fu) : (byte >> 4)) - 8);
        }
        out[2 * k + h] = __fmul_rn(v, d);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) out[j] = LoadW<F>(w, r, c + j);
  }
}

// Instantiates `body.template operator()<F>()` for w.fmt.
template <typename Body>
void ForFormat(WFmt f, Body&& body) {
  switch (f) {
    case WFmt::kF32: body.template operator()<WFmt::kF32>(); break;
    case WFmt::kF16: body.template operator()<WFmt::kF16>(); break;
    case WFmt::kBF16: body.template operator()<WFmt::kBF16>(); break;
    case WFmt::kMlx: body.template operator()<WFmt::kMlx>(); break;
    case WFmt::kQ8_0: body.template operator()<WFmt::kQ8_0>(); break;
    case WFmt::kQ4_0: body.template operator()<WFmt::kQ4_0>(); break;
    case WFmt::kQ4_K: body.template operator()<WFmt::kQ4_K>(); break;
    case WFmt::kQ6_K: body.template operator()<WFmt::kQ6_K>(); break;
    case WFmt::kFp8: body.template operator()<WFmt::kFp8>(); break;
  }
}

}  // namespace llmhost::cuda
