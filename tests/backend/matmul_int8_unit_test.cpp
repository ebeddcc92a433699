// The register-blocked kFastInt8 kernels (matmul_int8_unit_avx2.cpp: MLX
// 4/8-bit and Q4_0 with cols a multiple of 128) on the shapes that
// exercise their structure: one activation row (4-row tiles and a tail),
// 2..8 rows (one tile), more (several tiles and their tails), rows past one
// 32-row block, and rows long enough for several L1 chunks of units
// (2304 columns: 18 units of 128 / 36 of 64).
//   Accuracy: the activation-rounding bound of matmul_int8_test.cpp,
//     |y - y_ref| <= Σ_i |w_i| * dx_i / 2 + 1e-5 * Σ_i |w_i x_i|,
//     against the f32 reference.
//   Batch invariance: a row gives the same bits alone, in batches of 2..9
//     and of 70, with and without the pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "quant_test_util.h"
#include "util/thread_pool.h"

namespace llmhost::matmul_int8_unit_test {
namespace {

using testing::FormatSpec;
using testing::OwnedWeight;

std::vector<FormatSpec> UnitFormats() {
  return {testing::Mlx(4, 64),
          testing::Mlx(4, 32),
          testing::Mlx(4, 128, DType::kF16),
          testing::Mlx(4, 64, DType::kF32),
          testing::Mlx(8, 64),
          testing::Mlx(8, 32, DType::kF32),
          testing::Mlx(8, 128, DType::kF16),
          testing::Ggml(GgmlType::kQ4_0)};
}

std::vector<float> Mul(const WeightMatrix& w, const std::vector<float>& x, int64_t n, MatMulPrecision p,
                       ThreadPool* pool) {
  std::vector<float> y(n * w.rows, -3.0f);
  MatMul(w, x.data(), n, y.data(), p, pool);
  return y;
}

// Asserts the rounding bound for every output of y = x · Wᵀ.
void ExpectWithinBound(const WeightMatrix& w, const std::vector<float>& wf, const std::vector<float>& x,
                       int64_t n, const std::vector<float>& got, const std::vector<float>& ref) {
  const int64_t rows = w.rows, cols = w.cols;
  for (int64_t t = 0; t < n; ++t) {
    std::vector<double> dx(cols / 32);
    for (int64_t b = 0; b < cols / 32; ++b) {
      float amax = 0;
      for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[t * cols + 32 * b + i]));
      dx[b] = amax / 127.0;
    }
    for (int64_t r = 0; r < rows; ++r) {
      double bound = 0, mag = 0;
      for (int64_t c = 0; c < cols; ++c) {
        bound += std::fabs(wf[r * cols + c]) * dx[c / 32] / 2;
        mag += std::fabs(double(wf[r * cols + c]) * x[t * cols + c]);
      }
      ASSERT_LE(std::fabs(double(got[t * rows + r]) - ref[t * rows + r]), bound + 1e-5 * mag)
          << "x row " << t << " output " << r;
    }
  }
}

TEST(MatMulInt8Unit, WithinTheActivationRoundingBound) {
  if (BestCpuIsa() == CpuIsa::kScalar) GTEST_SKIP() << "no SIMD kernels on this CPU";
  ThreadPool pool(2);
  for (const FormatSpec& spec : UnitFormats()) {
    for (int64_t cols : {128, 384, 2304}) {
      const int64_t rows = cols > 1000 ? 37 : 70;
      OwnedWeight ow;
      testing::MakeRandomWeight(spec, rows, cols, static_cast<uint32_t>(cols + 3), &ow);
      std::vector<float> wf(rows * cols);
      DequantizeRows(ow.w, 0, rows, wf.data());
      for (int64_t n : {1, 3, 8, 13}) {
        SCOPED_TRACE(spec.Name() + " cols " + std::to_string(cols) + " n " + std::to_string(n));
        std::vector<float> x = testing::RandomVector(n * cols, static_cast<uint32_t>(n * 5 + cols));
        if (n == 3) {
          std::fill(x.begin(), x.begin() + cols, 0.0f);  // an all-zero row
          x[cols + 5] = 40.0f;                           // an outlier in a block
        }
        const std::vector<float> ref = Mul(ow.w, x, n, MatMulPrecision::kReference, &pool);
        const std::vector<float> got = Mul(ow.w, x, n, MatMulPrecision::kFastInt8, &pool);
        ExpectWithinBound(ow.w, wf, x, n, got, ref);
        if (n == 3) {
          for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(got[r], 0.0f);
        }
      }
    }
  }
}

// Codes at the ends of their ranges (all 0, all max, 0x80, 0x7F) with activations at ±max: the int16 sums of the 4-bit dot
// and the int16 codes of the 8-bit one must not overflow.
TEST(MatMulInt8Unit, ExtremeCodesDoNotOverflow) {
  if (BestCpuIsa() == CpuIsa::kScalar) GTEST_SKIP() << "no SIMD kernels on this CPU";
  for (const FormatSpec& spec : UnitFormats()) {
    for (uint8_t fill : {uint8_t{0x00}, uint8_t{0xFF}, uint8_t{0x80}, uint8_t{0x7F}}) {
      SCOPED_TRACE(spec.Name() + " byte " + std::to_string(fill));
      const int64_t rows = 5, cols = 256, n = 2;
      OwnedWeight ow;
      testing::MakeRandomWeight(spec, rows, cols, 9, &ow);
      const int block_bytes = 18;  // Q4_0
      if (spec.format == WeightFormat::kGgml) {  // codes only: keep each block's d
        for (size_t b = 0; b < ow.data.size(); b += block_bytes) {
          std::memset(ow.data.data() + b + 2, fill, block_bytes - 2);
        }
      } else {
        std::fill(ow.data.begin(), ow.data.end(), fill);
      }
      std::vector<float> wf(rows * cols);
      DequantizeRows(ow.w, 0, rows, wf.data());
      std::vector<float> x(n * cols);
      for (int64_t i = 0; i < n * cols; ++i) x[i] = (i % 3 == 0) ? -1.0f : 1.0f;
      std::fill(x.begin() + cols, x.end(), 1.0f);  // row 1: all +max
      const std::vector<float> ref = Mul(ow.w, x, n, MatMulPrecision::kReference, nullptr);
      const std::vector<float> got = Mul(ow.w, x, n, MatMulPrecision::kFastInt8, nullptr);
      ExpectWithinBound(ow.w, wf, x, n, got, ref);
    }
  }
}

TEST(MatMulInt8Unit, BatchInvariantBitForBit) {
  ThreadPool pool(2);
  for (const FormatSpec& spec : UnitFormats()) {
    SCOPED_TRACE(spec.Name());
    const int64_t cols = 2304, rows = 70;
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, rows, cols, 21, &ow);
    const std::vector<float> big = testing::RandomVector(70 * cols, 22);
    const std::vector<float> y70 = Mul(ow.w, big, 70, MatMulPrecision::kFastInt8, &pool);
    const std::vector<float> y70_single = Mul(ow.w, big, 70, MatMulPrecision::kFastInt8, nullptr);
    EXPECT_EQ(0, std::memcmp(y70.data(), y70_single.data(), y70.size() * 4)) << "pool vs none";
    for (int64_t probe : {0, 9, 69}) {
      const std::vector<float> one(big.begin() + probe * cols, big.begin() + (probe + 1) * cols);
      const std::vector<float> y1 = Mul(ow.w, one, 1, MatMulPrecision::kFastInt8, nullptr);
      EXPECT_EQ(0, std::memcmp(y1.data(), &y70[probe * rows], rows * 4)) << "n=70, row " << probe;
      for (int64_t n : {2, 5, 8, 9}) {
        std::vector<float> batch = testing::RandomVector(n * cols, static_cast<uint32_t>(probe + 10 * n));
        const int64_t at = n - 1;
        std::copy(one.begin(), one.end(), batch.begin() + at * cols);
        const std::vector<float> yn = Mul(ow.w, batch, n, MatMulPrecision::kFastInt8, &pool);
        EXPECT_EQ(0, std::memcmp(y1.data(), &yn[at * rows], rows * 4)) << "n=" << n << ", row " << probe;
      }
    }
  }
}

// Without AVX2 kernels (LLMHOST_CPU_ISA=scalar), kFastInt8 is the reference.
TEST(MatMulInt8Unit, ScalarFallbackIsTheReference) {
  SetActiveCpuIsaForTesting(CpuIsa::kScalar);
  for (const FormatSpec& spec : {testing::Mlx(4, 64), testing::Mlx(8, 32, DType::kF32)}) {
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, 9, 256, 5, &ow);
    const std::vector<float> x = testing::RandomVector(3 * 256, 6);
    EXPECT_EQ(Mul(ow.w, x, 3, MatMulPrecision::kFastInt8, nullptr), Mul(ow.w, x, 3, MatMulPrecision::kReference, nullptr))
        << spec.Name();
  }
  SetActiveCpuIsaForTesting(BestCpuIsa());
}

}  // namespace
}  // namespace llmhost::matmul_int8_unit_test
