// The sampler's vector passes, AVX2 against the scalar loops and against
// plain definitions: sanitizing, max and argmax (the lowest index on ties),
// shifted exponentials (the top weighs exactly 1, underflow exactly 0, an
// infinite scale), the band and threshold passes with block sums, and the
// top-k selection with its tie order.
#include "backend/cpu/vec_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "backend/cpu/cpu_features.h"

namespace llmhost::cpu::vec_math_test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> Row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

class VecMathTest : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (GetParam() > BestCpuIsa()) GTEST_SKIP() << "the CPU lacks " << CpuIsaName(GetParam());
    SetActiveCpuIsaForTesting(GetParam());
  }
  void TearDown() override { SetActiveCpuIsaForTesting(BestCpuIsa()); }
};

TEST_P(VecMathTest, SanitizeMaxAndArgMax) {
  for (int64_t n : {1, 7, 8, 33, 1001}) {
    std::vector<float> in = Row(n, static_cast<uint32_t>(n));
    in[static_cast<size_t>(n / 2)] = std::numeric_limits<float>::quiet_NaN();
    if (n > 2) in[1] = kInf;
    std::vector<float> out(in.size());
    SanitizeLogits(in.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float want = std::isnan(in[i]) ? -kInf : in[i] == kInf ? std::numeric_limits<float>::max() : in[i];
      EXPECT_EQ(out[i], want) << i;
    }
    EXPECT_EQ(MaxValue(out.data(), n), *std::max_element(out.begin(), out.end()));
    EXPECT_EQ(ArgMax(out.data(), n), std::max_element(out.begin(), out.end()) - out.begin());
  }
  std::vector<float> ties = {1, 5, 2, 5, 5, 0, 0, 0, 0, 5};
  EXPECT_EQ(ArgMax(ties.data(), 10), 1);
  std::vector<float> banned(20, -kInf);
  EXPECT_EQ(MaxValue(banned.data(), 20), -kInf);
  EXPECT_EQ(ArgMax(banned.data(), 20), 0);
}

TEST_P(VecMathTest, FiniteArgMaxIsTheSanitizedRowsArgMax) {
  for (int64_t n : {1, 7, 8, 31, 33, 1001}) {
    for (int nans : {0, 1, 40}) {
      std::vector<float> in = Row(n, static_cast<uint32_t>(n * 7 + nans));
      std::mt19937 rng(static_cast<uint32_t>(nans));
      for (int j = 0; j < nans; ++j) in[rng() % static_cast<size_t>(n)] = std::numeric_limits<float>::quiet_NaN();
      if (n > 40) in[static_cast<size_t>(n - 3)] = in[static_cast<size_t>(n - 9)] = 100.0f;  // a tie: the lower index
      std::vector<float> clean(in.size());
      SanitizeLogits(in.data(), clean.data(), n);
      const bool finite = std::isfinite(MaxValue(clean.data(), n));
      EXPECT_EQ(FiniteArgMax(in.data(), n), finite ? ArgMax(clean.data(), n) : -1) << n << " " << nans;
    }
  }
  std::vector<float> with_inf = {1, kInf, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(FiniteArgMax(with_inf.data(), 9), -1);  // the sanitized row's largest is FLT_MAX, not in the row
  std::vector<float> nothing(17, -kInf);
  nothing[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(FiniteArgMax(nothing.data(), 17), -1);
  std::vector<float> nan_first(12, -1.0f);
  nan_first[0] = std::numeric_limits<float>::quiet_NaN();
  nan_first[11] = 0.5f;
  EXPECT_EQ(FiniteArgMax(nan_first.data(), 12), 11);
}

TEST_P(VecMathTest, ExpShiftedAgreesWithExp) {
  for (int64_t n : {3, 8, 1000}) {
    std::vector<float> x = Row(n, 5);
    x[0] = -kInf;
    const float m = MaxValue(x.data(), n);
    for (float scale : {1.0f, 0.5f, 30.0f}) {
      std::vector<float> w(x.size());
      const double sum = ExpShifted(x.data(), n, m, scale, w.data());
      double want_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        // The exponent as the kernels form it, in float: its own rounding is not the kernel's error.
        const float arg = (x[i] - m) * scale;
        const double want = x[i] == m ? 1.0 : std::exp(static_cast<double>(arg));
        want_sum += want;
        if (want < 1e-30) {
          EXPECT_LT(w[i], 1e-30f);
        } else {
          EXPECT_NEAR(w[i], want, 1e-6 * want) << i;
        }
      }
      EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum);
      EXPECT_EQ(w[0], 0.0f) << "-inf weighs 0";
      EXPECT_EQ(w[static_cast<size_t>(ArgMax(x.data(), n))], 1.0f) << "the top weighs exactly 1";
    }
    // A temperature near 0: scale +inf leaves the top alone.
    std::vector<float> w(x.size());
    EXPECT_EQ(ExpShifted(x.data(), n, m, kInf, w.data()), 1.0);
  }
}

TEST_P(VecMathTest, BandThresholdAndBlockSums) {
  const int64_t n = 1037;
  std::vector<float> x = Row(n, 8);
  std::vector<float> w(x.size());
  ExpShifted(x.data(), n, MaxValue(x.data(), n), 1.0f, w.data());
  std::vector<int32_t> band;
  CollectBand(w.data(), n, 0.01f, 0.2f, &band);
  std::vector<int32_t> want;
  for (int32_t i = 0; i < n; ++i) {
    if (w[i] >= 0.01f && w[i] < 0.2f) want.push_back(i);
  }
  EXPECT_EQ(band, want);
  std::vector<float> z = w;
  std::vector<double> blocks((n + 255) / 256);
  const double total = ZeroBelow(z.data(), n, 0.05f, 256, blocks.data());
  double want_total = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(z[i], w[i] < 0.05f ? 0.0f : w[i]);
    want_total += z[i];
  }
  EXPECT_NEAR(total, want_total, 1e-5 * want_total);
  EXPECT_NEAR(std::accumulate(blocks.begin(), blocks.end(), 0.0), want_total, 1e-5 * want_total);
  double first = 0;
  for (int i = 0; i < 256; ++i) first += z[static_cast<size_t>(i)];
  EXPECT_NEAR(blocks[0], first, 1e-5 * std::max(first, 1e-9));
}

TEST_P(VecMathTest, TopIndicesAreTheLargestLowestIndexFirst) {
  for (int64_t n : {5, 64, 5000}) {
    std::vector<float> x = Row(n, 3);
    for (int64_t i = 0; i < n; i += 7) x[static_cast<size_t>(i)] = 2.5f;  // many ties
    for (size_t k : {size_t{1}, size_t{5}, size_t{20}}) {
      std::vector<int32_t> got;
      TopIndices(x.data(), n, k, &got);
      std::vector<int32_t> ids(static_cast<size_t>(n));
      std::iota(ids.begin(), ids.end(), 0);
      std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
      ids.resize(std::min(k, ids.size()));
      EXPECT_EQ(got, ids) << n << " " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, VecMathTest, ::testing::Values(CpuIsa::kScalar, CpuIsa::kAvx2),
                         [](const auto& info) { return std::string(CpuIsaName(info.param)); });

}  // namespace
}  // namespace llmhost::cpu::vec_math_test
