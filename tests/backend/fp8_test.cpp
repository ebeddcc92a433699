// FP8 e4m3 ("fn") conversions against the format's definition: every code's
// value, round trips, ties to even, saturation, NaN.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/matmul.h"

namespace llmhost::fp8_test {
namespace {

// Exponent bias 7, three mantissa bits, subnormals at exponent 0, no
// infinities, S.1111.111 NaN.
double Definition(int code) {
  const int e = (code >> 3) & 15, m = code & 7;
  if ((code & 0x7F) == 0x7F) return std::nan("");
  const double a = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return (code & 0x80) ? -a : a;
}

TEST(Fp8E4M3, EveryCodeWidensToItsValueAndBack) {
  for (int c = 0; c < 256; ++c) {
    const float v = Fp8E4M3ToF32(static_cast<uint8_t>(c));
    const double want = Definition(c);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(v)) << c;
      EXPECT_EQ(F32ToFp8E4M3(v) & 0x7F, 0x7F) << c;
      continue;
    }
    EXPECT_EQ(static_cast<double>(v), want) << c;
    EXPECT_EQ(F32ToFp8E4M3(v), c) << c << " = " << v;  // -0 keeps its sign
  }
  EXPECT_EQ(Fp8E4M3ToF32(0x7E), 448.0f);
  EXPECT_EQ(Fp8E4M3ToF32(0x01), std::ldexp(1.0f, -9));
}

TEST(Fp8E4M3, RoundsToNearestEvenAndSaturates) {
  // Between 1 (0x38) and 1.125 (0x39): the midpoint goes to the even code.
  EXPECT_EQ(F32ToFp8E4M3(1.0625f), 0x38);
  EXPECT_EQ(F32ToFp8E4M3(1.0626f), 0x39);
  EXPECT_EQ(F32ToFp8E4M3(1.1875f), 0x3A);  // between 0x39 and 0x3A: even
  // Subnormals: steps of 2^-9, the midpoint of 0 and 2^-9 rounds to 0.
  EXPECT_EQ(F32ToFp8E4M3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(F32ToFp8E4M3(std::ldexp(3.0f, -10)), 0x02);
  // The largest subnormal step rounds up into the smallest normal, 2^-6.
  EXPECT_EQ(F32ToFp8E4M3(std::ldexp(15.5f, -10)), 0x08);
  // 448 is the largest value; beyond the midpoint to 480 it saturates.
  EXPECT_EQ(F32ToFp8E4M3(460.0f), 0x7E);
  EXPECT_EQ(F32ToFp8E4M3(1e6f), 0x7E);
  EXPECT_EQ(F32ToFp8E4M3(-1e6f), 0xFE);
  EXPECT_EQ(F32ToFp8E4M3(INFINITY), 0x7E);
  EXPECT_EQ(F32ToFp8E4M3(std::nanf("")) & 0x7F, 0x7F);
}

}  // namespace
}  // namespace llmhost::fp8_test
