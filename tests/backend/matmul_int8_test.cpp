// MatMulPrecision::kFastInt8: quantized weights times activations rounded to
// int8 per 32 values. Checked against the f32 reference with the error bound
// that rounding implies: each activation moves by at most dx/2 (dx = max|x|
// of its block / 127), so
//   |y - y_ref| <= Σ_i |w_i| * dx_i / 2 + 1e-5 * Σ_i |w_i x_i|.
// A wrong code, offset or scale breaks this bound by orders of magnitude.
// Measured (printed): the relative error per row ‖y - y_ref‖ / ‖y_ref‖ on
// uniform random data, documented here as a tolerance of 1.5e-2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "quant_test_util.h"
#include "util/thread_pool.h"

namespace llmhost::matmul_int8_test {
namespace {

using testing::FormatSpec;
using testing::OwnedWeight;

constexpr double kInt8RowTol = 1.5e-2;

std::vector<FormatSpec> QuantizedFormats() {
  std::vector<FormatSpec> v;
  for (const FormatSpec& s : testing::AllFormats()) {
    if (s.format == WeightFormat::kMlxAffine) v.push_back(s);
    if (s.format == WeightFormat::kGgml && s.ColMultiple() > 1) v.push_back(s);
  }
  return v;
}

std::vector<float> Mul(const WeightMatrix& w, const std::vector<float>& x, int64_t n, MatMulPrecision p,
                       ThreadPool* pool) {
  std::vector<float> y(n * w.rows, -3.0f);
  MatMul(w, x.data(), n, y.data(), p, pool);
  return y;
}

TEST(MatMulInt8, WithinTheActivationRoundingBound) {
  if (BestCpuIsa() == CpuIsa::kScalar) GTEST_SKIP() << "no SIMD kernels on this CPU";
  ThreadPool pool(2);
  double worst = 0;
  for (const FormatSpec& spec : QuantizedFormats()) {
    const int64_t m = spec.ColMultiple();
    for (int64_t cols : {m, 2 * m, 4 * m}) {
      const int64_t rows = 19;
      OwnedWeight ow;
      testing::MakeRandomWeight(spec, rows, cols, static_cast<uint32_t>(cols + 7), &ow);
      std::vector<float> wf(rows * cols);
      DequantizeRows(ow.w, 0, rows, wf.data());
      for (int64_t n : {1, 2, 3, 5, 8, 17, 70}) {
        SCOPED_TRACE(spec.Name() + " cols " + std::to_string(cols) + " n " + std::to_string(n));
        std::vector<float> x = testing::RandomVector(n * cols, static_cast<uint32_t>(n * 3 + 1));
        if (n == 3) std::fill(x.begin(), x.begin() + cols, 0.0f);  // an all-zero row
        const std::vector<float> ref = Mul(ow.w, x, n, MatMulPrecision::kReference, &pool);
        const std::vector<float> got = Mul(ow.w, x, n, MatMulPrecision::kFastInt8, &pool);
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
          if (n != 3 || t != 0) {
            const double e = testing::RelErr(&got[t * rows], &ref[t * rows], rows);
            worst = std::max(worst, e);
            EXPECT_LE(e, kInt8RowTol) << "x row " << t;
          } else {
            for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(got[r], 0.0f);
          }
        }
      }
    }
  }
  std::printf("worst int8 row relative error: %.3g\n", worst);
}

TEST(MatMulInt8, BatchInvariantBitForBit) {
  ThreadPool pool(2);
  for (const FormatSpec& spec : QuantizedFormats()) {
    SCOPED_TRACE(spec.Name());
    const int64_t cols = 2 * spec.ColMultiple(), rows = 37;
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, rows, cols, 11, &ow);
    const std::vector<float> big = testing::RandomVector(70 * cols, 12);
    const std::vector<float> y70 = Mul(ow.w, big, 70, MatMulPrecision::kFastInt8, &pool);
    for (int64_t probe : {0, 6, 69}) {
      const std::vector<float> one(big.begin() + probe * cols, big.begin() + (probe + 1) * cols);
      const std::vector<float> y1 = Mul(ow.w, one, 1, MatMulPrecision::kFastInt8, nullptr);
      std::vector<float> seven = testing::RandomVector(7 * cols, static_cast<uint32_t>(probe + 20));
      std::copy(one.begin(), one.end(), seven.begin() + 5 * cols);
      const std::vector<float> y7 = Mul(ow.w, seven, 7, MatMulPrecision::kFastInt8, &pool);
      EXPECT_EQ(0, std::memcmp(y1.data(), &y7[5 * rows], rows * 4)) << "n=7, row " << probe;
      EXPECT_EQ(0, std::memcmp(y1.data(), &y70[probe * rows], rows * 4)) << "n=70, row " << probe;
    }
  }
}

TEST(MatMulInt8, FloatWeightsUseTheF32Path) {
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kBF16, WeightFormat::kF16}) {
    OwnedWeight ow;
    testing::MakeRandomWeight(testing::Plain(f), 9, 100, 3, &ow);
    const std::vector<float> x = testing::RandomVector(3 * 100, 4);
    EXPECT_EQ(Mul(ow.w, x, 3, MatMulPrecision::kFastInt8, nullptr), Mul(ow.w, x, 3, MatMulPrecision::kFast, nullptr));
  }
}

}  // namespace
}  // namespace llmhost::matmul_int8_test
