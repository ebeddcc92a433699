// CheckWeight's errors for inconsistent matrices, DequantizeRows on bad
// ranges, the float conversions, and CPU feature detection.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"

namespace llmhost::matmul_check_test {
namespace {

WeightMatrix Base() {
  static const float data[4096] = {};
  static const uint16_t params[512] = {};
  WeightMatrix w;
  w.rows = 4;
  w.cols = 256;
  w.data = data;
  w.scales = params;
  w.biases = params;
  return w;
}

void ExpectError(const WeightMatrix& w, StatusCode code, const std::string& needle) {
  const Status s = CheckWeight(w);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
}

TEST(CheckWeight, AcceptsEveryFormat) {
  WeightMatrix w = Base();
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBF16}) {
    w.format = f;
    EXPECT_TRUE(CheckWeight(w).ok());
  }
  w.format = WeightFormat::kMlxAffine;
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (int g : {32, 64, 128}) {
      w.bits = bits;
      w.group_size = g;
      EXPECT_TRUE(CheckWeight(w).ok()) << CheckWeight(w).ToString();
    }
  }
  w.format = WeightFormat::kGgml;
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                     GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                     GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ8_K}) {
    w.ggml_type = t;
    EXPECT_TRUE(CheckWeight(w).ok()) << CheckWeight(w).ToString();
  }
}

TEST(CheckWeight, RejectsBadShapes) {
  WeightMatrix w = Base();
  w.cols = 0;
  ExpectError(w, StatusCode::kInvalidArgument, "cols > 0");
  w = Base();
  w.rows = -1;
  ExpectError(w, StatusCode::kInvalidArgument, "rows must be >= 0");
  w = Base();
  w.rows = int64_t{1} << 40;
  w.cols = int64_t{1} << 20;
  ExpectError(w, StatusCode::kInvalidArgument, "too many elements");
  w = Base();
  w.data = nullptr;
  ExpectError(w, StatusCode::kInvalidArgument, "no data");
  w.rows = 0;  // an empty matrix needs no data
  EXPECT_TRUE(CheckWeight(w).ok());
}

TEST(CheckWeight, RejectsBadMlx) {
  WeightMatrix w = Base();
  w.format = WeightFormat::kMlxAffine;
  w.bits = 7;
  w.group_size = 64;
  ExpectError(w, StatusCode::kNotSupported, "bits 7");
  w.bits = 4;
  w.group_size = 48;
  ExpectError(w, StatusCode::kNotSupported, "group size 48");
  w.group_size = 128;
  w.cols = 320;
  ExpectError(w, StatusCode::kInvalidArgument, "cols 320 not a multiple of group size 128");
  w.cols = 256;
  w.scale_dtype = DType::kI32;
  ExpectError(w, StatusCode::kNotSupported, "scales/biases of dtype I32");
  w.scale_dtype = DType::kF16;
  w.biases = nullptr;
  ExpectError(w, StatusCode::kInvalidArgument, "missing scales or biases");
}

TEST(CheckWeight, RejectsBadGgml) {
  WeightMatrix w = Base();
  w.format = WeightFormat::kGgml;
  w.ggml_type = GgmlType::kQ4_K;
  w.cols = 96;
  ExpectError(w, StatusCode::kInvalidArgument, "cols 96 not a multiple of the 256-element block");
  w.ggml_type = GgmlType::kQ8_0;
  w.cols = 40;
  ExpectError(w, StatusCode::kInvalidArgument, "not a multiple of the 32-element block");
  w.cols = 64;
  w.ggml_type = GgmlType::kQ2_K;
  ExpectError(w, StatusCode::kNotSupported, "tensor type Q2_K");
  w.ggml_type = static_cast<GgmlType>(99);
  ExpectError(w, StatusCode::kNotSupported, "tensor type 99");
}

TEST(DequantizeRows, BadRangeGivesNaNNotACrash) {
  WeightMatrix w = Base();
  std::vector<float> out(2 * 256, 1.0f);
  DequantizeRows(w, 3, 5, out.data());  // past the last row
  for (float v : out) EXPECT_TRUE(std::isnan(v));
  std::fill(out.begin(), out.end(), 1.0f);
  DequantizeRows(w, 1, 3, out.data());
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

TEST(Conversions, HalfRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(f))));
      continue;
    }
    ASSERT_EQ(F32ToF16(f), h) << std::hex << h;
  }
}

TEST(Conversions, F32ToF16RoundsToNearestEven) {
  EXPECT_EQ(F32ToF16(1.0f), 0x3C00);
  EXPECT_EQ(F32ToF16(1.0f + 0x1p-11f), 0x3C00);             // tie: stays even
  EXPECT_EQ(F32ToF16(1.0f + 3 * 0x1p-11f), 0x3C02);         // tie: rounds up to even
  EXPECT_EQ(F32ToF16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // above the tie
  EXPECT_EQ(F32ToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(F32ToF16(65519.0f), 0x7BFF);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7C00);  // overflows to infinity
  EXPECT_EQ(F32ToF16(-INFINITY), 0xFC00);
  EXPECT_EQ(F32ToF16(0x1p-24f), 0x0001);   // smallest subnormal
  EXPECT_EQ(F32ToF16(0x1p-25f), 0x0000);   // tie to even: zero
  EXPECT_EQ(F32ToF16(0x1.8p-24f), 0x0002);  // 1.5 ulp: tie to even
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(0x1.ff8p-15f), 0x03FF);  // largest subnormal
  EXPECT_EQ(F32ToF16(0x1.ffcp-15f), 0x0400);  // tie: rounds up into the normals
}

TEST(Conversions, Bf16) {
  EXPECT_EQ(F32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(F32ToBf16(1.0f + 0x1p-8f), 0x3F80);      // tie: even
  EXPECT_EQ(F32ToBf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // tie: up to even
  EXPECT_EQ(Bf16ToF32(0xC000), -2.0f);
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(NAN))));
}

TEST(CpuFeatures, DetectionIsConsistent) {
  const CpuFeatures& f = DetectedCpuFeatures();
  std::printf("CPU features: %s; kernels: %s\n", f.Describe().c_str(), CpuIsaName(BestCpuIsa()));
  if (BestCpuIsa() != CpuIsa::kScalar) {
    EXPECT_TRUE(f.avx2 && f.fma && f.f16c);
  }
  if (HasBf16Matmul(BestCpuIsa())) {
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl && f.avx512_bf16);
  }
  if (BestCpuIsa() == CpuIsa::kAmx) {
    EXPECT_TRUE(f.amx_tile && f.amx_bf16);
  }
  if (f.avx512bw) {
    EXPECT_TRUE(f.avx512f);
  }
  SetActiveCpuIsaForTesting(CpuIsa::kScalar);
  EXPECT_EQ(ActiveCpuIsa(), CpuIsa::kScalar);
  SetActiveCpuIsaForTesting(BestCpuIsa());
  EXPECT_EQ(ActiveCpuIsa(), BestCpuIsa());
}

}  // namespace
}  // namespace llmhost::matmul_check_test
