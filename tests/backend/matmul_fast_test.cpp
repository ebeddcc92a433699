// MatMul: the reference path against a float64 dot product, the fast path
// against the reference for every stored format, and batch invariance (a row
// of x gives the same bits whatever the batch around it).
//
// Tolerances, fast vs reference, every format:
//   per output row of y with >= 16 outputs: ‖y_fast - y_ref‖ / ‖y_ref‖ <= 1e-5;
//   per output: |y_fast - y_ref| <= 2e-6 * Σ|x·w| (meaningful under cancellation).
//   Both paths multiply the same exactly dequantized f32 weights and sum in
//   f32; they differ only in the order of the sum (the fast path: 8 lanes, then
//   a fixed tree), so the difference is f32 rounding, about sqrt(cols) * 6e-8
//   of the row norm (seen: <= 2e-6).
// Against float64: |y - y64| <= 1e-5 * Σ|x·w| per element (a bound that
// holds even when the sum cancels).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "quant_test_util.h"
#include "util/thread_pool.h"

namespace llmhost::matmul_fast_test {
namespace {

using testing::FormatSpec;
using testing::OwnedWeight;

constexpr double kFastVsReferenceTol = 1e-5;
constexpr double kFastVsReferenceAbsTol = 2e-6;  // of Σ|x·w|

std::vector<float> RunMatMul(const WeightMatrix& w, const std::vector<float>& x, int64_t n,
                       MatMulPrecision p, ThreadPool* pool) {
  std::vector<float> y(n * w.rows, -7.0f);
  MatMul(w, x.data(), n, y.data(), p, pool);
  return y;
}

std::vector<int64_t> ColsFor(const FormatSpec& s) {
  const int64_t m = s.ColMultiple();
  if (m == 1) return {1, 7, 8, 9, 100, 257, 300};
  if (m == 256) return {256, 512, 768};
  return {m, 2 * m, 3 * m, 9 * m};  // 9 * 32 = 288: a chunk boundary inside a block run
}

TEST(MatMulReference, MatchesFloat64DotProducts) {
  ThreadPool pool(2);
  for (const FormatSpec& spec : testing::AllFormats()) {
    SCOPED_TRACE(spec.Name());
    const int64_t cols = ColsFor(spec).back(), rows = 13, n = 5;
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, rows, cols, 1, &ow);
    const std::vector<float> x = testing::RandomVector(n * cols, 2);
    std::vector<float> wf(rows * cols);
    DequantizeRows(ow.w, 0, rows, wf.data());
    const std::vector<float> y = RunMatMul(ow.w, x, n, MatMulPrecision::kReference, &pool);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        double exact = 0, mag = 0;
        for (int64_t c = 0; c < cols; ++c) {
          exact += double(x[t * cols + c]) * wf[r * cols + c];
          mag += std::fabs(double(x[t * cols + c]) * wf[r * cols + c]);
        }
        ASSERT_LE(std::fabs(y[t * rows + r] - exact), 1e-5 * mag) << "t " << t << " r " << r;
      }
    }
  }
}

TEST(MatMulFast, MatchesReferenceEveryFormatAndShape) {
  if (BestCpuIsa() == CpuIsa::kScalar) GTEST_SKIP() << "no SIMD kernels on this CPU";
  ThreadPool pool(2);
  double worst = 0;
  for (const FormatSpec& spec : testing::AllFormats()) {
    for (int64_t cols : ColsFor(spec)) {
      for (int64_t rows : {1, 2, 3, 5, 23, 25, 49}) {
        OwnedWeight ow;
        testing::MakeRandomWeight(spec, rows, cols, static_cast<uint32_t>(rows * 131 + cols), &ow);
        std::vector<float> wf(rows * cols);
        DequantizeRows(ow.w, 0, rows, wf.data());
        for (int64_t n : {1, 2, 3, 8, 17, 64}) {
          if (rows * cols * n > 4'000'000) continue;
          SCOPED_TRACE(spec.Name() + " rows " + std::to_string(rows) + " cols " +
                       std::to_string(cols) + " n " + std::to_string(n));
          const std::vector<float> x = testing::RandomVector(n * cols, static_cast<uint32_t>(n));
          const std::vector<float> ref = RunMatMul(ow.w, x, n, MatMulPrecision::kReference, &pool);
          const std::vector<float> fast = RunMatMul(ow.w, x, n, MatMulPrecision::kFast, &pool);
          for (int64_t t = 0; t < n; ++t) {
            if (rows >= 16) {
              const double e = testing::RelErr(&fast[t * rows], &ref[t * rows], rows);
              worst = std::max(worst, e);
              ASSERT_LE(e, kFastVsReferenceTol) << "x row " << t;
            }
            for (int64_t r = 0; r < rows; ++r) {
              double mag = 0;
              for (int64_t c = 0; c < cols; ++c) mag += std::fabs(double(x[t * cols + c]) * wf[r * cols + c]);
              ASSERT_LE(std::fabs(double(fast[t * rows + r]) - ref[t * rows + r]), kFastVsReferenceAbsTol * mag)
                  << "x row " << t << " output " << r;
            }
          }
        }
      }
    }
  }
  RecordProperty("worst_row_rel_err", std::to_string(worst));
  std::printf("worst fast-vs-reference row relative error: %.3g\n", worst);
}

// A row of x gives bit-identical outputs alone (n = 1), in a batch of 7 and
// of 64 (different neighbours, different tile positions), in a batch of 260
// (past the 256-row accumulator block), single- or multi-threaded.
TEST(MatMulFast, BatchInvariantBitForBit) {
  ThreadPool pool(2);
  for (const FormatSpec& spec : testing::AllFormats()) {
    SCOPED_TRACE(spec.Name());
    const int64_t cols = ColsFor(spec).back(), rows = 50;
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, rows, cols, 3, &ow);
    const std::vector<float> big = testing::RandomVector(260 * cols, 4);
    for (MatMulPrecision p : {MatMulPrecision::kFast, MatMulPrecision::kReference}) {
      const std::vector<float> y260 = RunMatMul(ow.w, big, 260, p, &pool);
      const std::vector<float> y64 = RunMatMul(ow.w, big, 64, p, nullptr);
      for (int64_t probe : {0, 5, 63, 259}) {
        const std::vector<float> one(big.begin() + probe * cols, big.begin() + (probe + 1) * cols);
        const std::vector<float> y1 = RunMatMul(ow.w, one, 1, p, &pool);
        // The probe row at position 3 of a batch of 7 of other rows.
        std::vector<float> seven = testing::RandomVector(7 * cols, static_cast<uint32_t>(probe + 9));
        std::copy(one.begin(), one.end(), seven.begin() + 3 * cols);
        const std::vector<float> y7 = RunMatMul(ow.w, seven, 7, p, &pool);
        EXPECT_EQ(0, std::memcmp(y1.data(), &y7[3 * rows], rows * 4)) << "n=7, row " << probe;
        EXPECT_EQ(0, std::memcmp(y1.data(), &y260[probe * rows], rows * 4)) << "n=260, row " << probe;
        if (probe < 64) {
          EXPECT_EQ(0, std::memcmp(y1.data(), &y64[probe * rows], rows * 4)) << "n=64, row " << probe;
        }
      }
    }
  }
}

// Batches past 512 rows are processed 512 rows at a time: rows on either side
// of the split still match their n = 1 results bit for bit.
TEST(MatMulFast, LargeBatchSplitIsInvariant) {
  ThreadPool pool(2);
  for (const FormatSpec& spec : {testing::Plain(WeightFormat::kBF16), testing::Mlx(4, 64),
                                 testing::Ggml(GgmlType::kQ4_0)}) {
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, 30, 256, 8, &ow);
    const std::vector<float> x = testing::RandomVector(530 * 256, 9);
    for (MatMulPrecision p : {MatMulPrecision::kFast, MatMulPrecision::kFastInt8}) {
      const std::vector<float> all = RunMatMul(ow.w, x, 530, p, &pool);
      for (int64_t probe : {0, 511, 512, 529}) {
        const std::vector<float> one(x.begin() + probe * 256, x.begin() + (probe + 1) * 256);
        const std::vector<float> y1 = RunMatMul(ow.w, one, 1, p, nullptr);
        EXPECT_EQ(0, std::memcmp(y1.data(), &all[probe * 30], 30 * 4)) << spec.Name() << " row " << probe;
      }
    }
  }
}

// The scalar fallback (what a CPU without AVX2 runs) equals the reference.
TEST(MatMulFast, ScalarFallbackIsTheReference) {
  SetActiveCpuIsaForTesting(CpuIsa::kScalar);
  for (const FormatSpec& spec : {testing::Plain(WeightFormat::kBF16), testing::Mlx(4, 64),
                                 testing::Ggml(GgmlType::kQ4_K)}) {
    OwnedWeight ow;
    testing::MakeRandomWeight(spec, 9, ColsFor(spec).back(), 5, &ow);
    const std::vector<float> x = testing::RandomVector(3 * ow.w.cols, 6);
    EXPECT_EQ(RunMatMul(ow.w, x, 3, MatMulPrecision::kFast, nullptr),
              RunMatMul(ow.w, x, 3, MatMulPrecision::kReference, nullptr))
        << spec.Name();
  }
  SetActiveCpuIsaForTesting(BestCpuIsa());
}

TEST(MatMulFast, EmptyAndInvalid) {
  OwnedWeight ow;
  testing::MakeRandomWeight(testing::Plain(WeightFormat::kF32), 4, 8, 1, &ow);
  std::vector<float> y(4, 3.0f);
  MatMul(ow.w, nullptr, 0, y.data(), MatMulPrecision::kFast, nullptr);  // n = 0: nothing
  EXPECT_EQ(y[0], 3.0f);
  WeightMatrix bad = ow.w;
  bad.format = WeightFormat::kGgml;
  bad.ggml_type = GgmlType::kQ4_0;  // 8 columns: not a multiple of 32
  std::vector<float> x(8, 1.0f);
  MatMul(bad, x.data(), 1, y.data(), MatMulPrecision::kFast, nullptr);
  for (float v : y) EXPECT_TRUE(std::isnan(v));  // visible failure, no out-of-bounds read
}

}  // namespace
}  // namespace llmhost::matmul_fast_test
