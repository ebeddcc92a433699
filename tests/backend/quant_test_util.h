// Test helpers for the matmul/quantization tests: random weight matrices in
// every stored format, independent encoders (values -> stored bytes written
// from the format descriptions), and error measures.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/weight_matrix.h"

namespace llmhost::testing {

// One stored format, as the tests enumerate them.
struct FormatSpec {
  WeightFormat format = WeightFormat::kF32;
  GgmlType ggml_type = GgmlType::kF32;
  int bits = 0, group_size = 0;
  DType scale_dtype = DType::kBF16;

  std::string Name() const {
    switch (format) {
      case WeightFormat::kF32: return "f32";
      case WeightFormat::kF16: return "f16";
      case WeightFormat::kBF16: return "bf16";
      case WeightFormat::kMlxAffine:
        return "mlx" + std::to_string(bits) + "_g" + std::to_string(group_size) + "_" +
               DTypeName(scale_dtype);
      case WeightFormat::kGgml: return std::string("gguf_") + GgmlTypeInfo(static_cast<uint32_t>(ggml_type))->name;
      case WeightFormat::kFp8E4M3: return "fp8_g" + std::to_string(group_size);
    }
    return "?";
  }
  // Columns must be a multiple of this.
  int64_t ColMultiple() const {
    if (format == WeightFormat::kMlxAffine || format == WeightFormat::kFp8E4M3) return group_size;
    if (format != WeightFormat::kGgml) return 1;
    const auto info = GgmlTypeInfo(static_cast<uint32_t>(ggml_type));
    return info->block_size;
  }
};

inline FormatSpec Plain(WeightFormat f) { return FormatSpec{f}; }
inline FormatSpec Mlx(int bits, int group, DType sd = DType::kBF16) {
  FormatSpec s;
  s.format = WeightFormat::kMlxAffine;
  s.bits = bits;
  s.group_size = group;
  s.scale_dtype = sd;
  return s;
}
// FP8 e4m3 with f32 scales over groups of `group` columns (a whole row's
// width stands for per-channel scales).
inline FormatSpec Fp8(int group) {
  FormatSpec s;
  s.format = WeightFormat::kFp8E4M3;
  s.group_size = group;
  s.scale_dtype = DType::kF32;
  return s;
}
inline FormatSpec Ggml(GgmlType t) {
  FormatSpec s;
  s.format = WeightFormat::kGgml;
  s.ggml_type = t;
  return s;
}

inline std::vector<GgmlType> AllGgmlTypes() {
  return {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
          GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
          GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ8_K};
}

// Every supported format (MLX: every width with group 64 and BF16 scales,
// plus the other group sizes and scale dtypes on 4 and 8 bits).
inline std::vector<FormatSpec> AllFormats() {
  std::vector<FormatSpec> v = {Plain(WeightFormat::kF32), Plain(WeightFormat::kF16),
                               Plain(WeightFormat::kBF16)};
  for (int bits : {2, 3, 4, 5, 6, 8}) v.push_back(Mlx(bits, 64));
  v.push_back(Mlx(4, 32));
  v.push_back(Mlx(4, 128, DType::kF16));
  v.push_back(Mlx(8, 32, DType::kF32));
  v.push_back(Mlx(3, 128, DType::kF16));
  for (GgmlType t : AllGgmlTypes()) v.push_back(Ggml(t));
  v.push_back(Fp8(32));
  v.push_back(Fp8(128));
  return v;
}

// A weight matrix with its own storage.
struct OwnedWeight {
  WeightMatrix w;
  std::vector<uint8_t> data, scales, biases;
  OwnedWeight() = default;
  OwnedWeight(const OwnedWeight&) = delete;
  OwnedWeight& operator=(const OwnedWeight&) = delete;
  void Bind() {
    w.data = data.data();
    w.scales = scales.empty() ? nullptr : scales.data();
    w.biases = biases.empty() ? nullptr : biases.data();
  }
};

inline void PutU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void PutF32(uint8_t* p, float v) { std::memcpy(p, &v, 4); }

// Stores `v` as a scale/bias of dtype `dt`; returns the value as stored.
inline float PutParam(std::vector<uint8_t>& buf, int64_t index, DType dt, float v) {
  if (dt == DType::kF32) {
    PutF32(buf.data() + 4 * index, v);
    return v;
  }
  const uint16_t h = dt == DType::kF16 ? F32ToF16(v) : F32ToBf16(v);
  PutU16(buf.data() + 2 * index, h);
  return dt == DType::kF16 ? F16ToF32(h) : Bf16ToF32(h);
}

// Random weights of about unit scale. Quantized formats get random codes and
// scales chosen so that the dequantized weights are O(0.1..1); ggml blocks are
// random bytes with their f16/f32 scale fields replaced by sane values.
inline void MakeRandomWeight(const FormatSpec& s, int64_t rows, int64_t cols, uint32_t seed,
                             OwnedWeight* out) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  WeightMatrix& w = out->w;
  w = WeightMatrix{};
  w.format = s.format;
  w.rows = rows;
  w.cols = cols;
  const int64_t n = rows * cols;
  switch (s.format) {
    case WeightFormat::kF32:
      out->data.resize(4 * n);
      for (int64_t i = 0; i < n; ++i) PutF32(out->data.data() + 4 * i, uni(rng));
      break;
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      out->data.resize(2 * n);
      for (int64_t i = 0; i < n; ++i) {
        PutU16(out->data.data() + 2 * i,
               s.format == WeightFormat::kF16 ? F32ToF16(uni(rng)) : F32ToBf16(uni(rng)));
      }
      break;
    case WeightFormat::kMlxAffine: {
      w.bits = s.bits;
      w.group_size = s.group_size;
      w.scale_dtype = s.scale_dtype;
      out->data.resize(n * s.bits / 8);
      for (auto& b : out->data) b = static_cast<uint8_t>(byte(rng));
      const int64_t groups = n / s.group_size;
      const size_t psize = DTypeSize(s.scale_dtype);
      out->scales.resize(groups * psize);
      out->biases.resize(groups * psize);
      const float qmax = static_cast<float>((1 << s.bits) - 1);
      for (int64_t g = 0; g < groups; ++g) {
        PutParam(out->scales, g, s.scale_dtype, (0.5f + 0.5f * std::fabs(uni(rng))) * 2.0f / qmax);
        PutParam(out->biases, g, s.scale_dtype, -1.0f + 0.1f * uni(rng));
      }
      break;
    }
    case WeightFormat::kFp8E4M3: {
      // Every code but the NaNs (0x7F, 0xFF), scales near 1/448 so weights are O(1).
      w.group_size = s.group_size;
      w.scale_dtype = DType::kF32;
      out->data.resize(n);
      for (auto& b : out->data) {
        do b = static_cast<uint8_t>(byte(rng));
        while ((b & 0x7F) == 0x7F);
      }
      out->scales.resize(4 * (n / s.group_size));
      for (int64_t g = 0; g < n / s.group_size; ++g) PutF32(out->scales.data() + 4 * g, (1.0f + uni(rng)) / 448);
      break;
    }
    case WeightFormat::kGgml: {
      w.ggml_type = s.ggml_type;
      const auto info = *GgmlTypeInfo(static_cast<uint32_t>(s.ggml_type));
      const int64_t blocks = n / info.block_size;
      out->data.resize(blocks * info.type_size);
      for (auto& b : out->data) b = static_cast<uint8_t>(byte(rng));
      for (int64_t i = 0; i < blocks; ++i) {
        uint8_t* b = out->data.data() + i * info.type_size;
        auto half = [&](int off, float v) { PutU16(b + off, F32ToF16(v)); };
        switch (s.ggml_type) {
          case GgmlType::kF32: PutF32(b, uni(rng)); break;
          case GgmlType::kF16: half(0, uni(rng)); break;
          case GgmlType::kBF16: PutU16(b, F32ToBf16(uni(rng))); break;
          case GgmlType::kQ8_0: half(0, uni(rng) / 127); break;
          case GgmlType::kQ4_0: half(0, uni(rng) / 8); break;
          case GgmlType::kQ5_0: half(0, uni(rng) / 16); break;
          case GgmlType::kQ4_1: half(0, uni(rng) / 8); half(2, -uni(rng)); break;
          case GgmlType::kQ5_1: half(0, uni(rng) / 16); half(2, -uni(rng)); break;
          case GgmlType::kQ4_K: half(0, uni(rng) / 500); half(2, uni(rng) / 60); break;
          case GgmlType::kQ5_K: half(0, uni(rng) / 1000); half(2, uni(rng) / 60); break;
          case GgmlType::kQ6_K: half(208, uni(rng) / 2000); break;
          case GgmlType::kQ8_K: PutF32(b, uni(rng) / 127); break;
          default: break;
        }
      }
      break;
    }
  }
  out->Bind();
}

inline std::vector<float> RandomVector(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& f : v) f = uni(rng);
  return v;
}

// ‖a - b‖ / ‖b‖ over [0, n) (0 when both are zero).
inline double RelErr(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace llmhost::testing
