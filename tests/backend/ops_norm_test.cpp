// RMSNorm: hand-computed values, Gemma's (1 + w), per-head rows at a stride,
// in place, and independence from the thread split.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/ops_norm.h"

namespace llmhost::ops_norm_test {
namespace {

TEST(OpsNormTest, HandComputedRow) {
  const std::vector<float> x = {1, 2, 3, 4}, w = {1, 0.5f, 2, -1};
  std::vector<float> y(4);
  cpu::RmsNorm(x.data(), 1, 4, 4, w.data(), 1e-6f, false, y.data(), nullptr);
  const double inv = 1 / std::sqrt(7.5 + 1e-6);  // mean of squares (1+4+9+16)/4
  EXPECT_NEAR(y[0], 1 * inv * 1, 1e-6);
  EXPECT_NEAR(y[1], 2 * inv * 0.5, 1e-6);
  EXPECT_NEAR(y[2], 3 * inv * 2, 1e-6);
  EXPECT_NEAR(y[3], 4 * inv * -1, 1e-6);
  // Gemma: weight 0 means scale 1.
  const std::vector<float> zero(4, 0.0f);
  cpu::RmsNorm(x.data(), 1, 4, 4, zero.data(), 1e-6f, true, y.data(), nullptr);
  EXPECT_NEAR(y[3], 4 * inv, 1e-6);
  cpu::RmsNorm(x.data(), 1, 4, 4, w.data(), 1e-6f, true, y.data(), nullptr);
  EXPECT_NEAR(y[2], 3 * inv * 3, 1e-6);
}

TEST(OpsNormTest, EpsilonMattersForSmallRows) {
  const std::vector<float> x = {1e-4f, -1e-4f}, w = {1, 1};
  std::vector<float> y(2);
  cpu::RmsNorm(x.data(), 1, 2, 2, w.data(), 1e-6f, false, y.data(), nullptr);
  EXPECT_NEAR(y[0], 1e-4 / std::sqrt(1e-8 + 1e-6), 1e-6);
}

// Per-head norms: rows = tokens x heads of head_dim values, in place, and the
// result does not depend on how many rows one call covers (thread pool or not).
TEST(OpsNormTest, PerHeadRowsInPlaceAndPoolInvariant) {
  const int64_t tokens = 37, heads = 8, hd = 64;
  std::vector<float> x(tokens * heads * hd), w(hd);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i) * (1 + i % 5);
  for (int64_t i = 0; i < hd; ++i) w[i] = 0.5f + 0.01f * i;
  std::vector<float> one_by_one(x.size());
  for (int64_t r = 0; r < tokens * heads; ++r) {
    cpu::RmsNorm(x.data() + r * hd, 1, hd, hd, w.data(), 1e-5f, false, one_by_one.data() + r * hd,
                 nullptr);
  }
  ThreadPool pool(3);
  std::vector<float> inplace = x;
  cpu::RmsNorm(inplace.data(), tokens * heads, hd, hd, w.data(), 1e-5f, false, inplace.data(), &pool);
  EXPECT_EQ(inplace, one_by_one);
  // Strided rows (a head inside a wider fused row) leave the gaps untouched.
  std::vector<float> wide(3 * hd, 7.0f);
  for (int64_t i = 0; i < hd; ++i) wide[i] = wide[2 * hd + i] = x[i];
  cpu::RmsNorm(wide.data(), 2, hd, 2 * hd, w.data(), 1e-5f, false, wide.data(), nullptr);
  for (int64_t i = 0; i < hd; ++i) {
    EXPECT_EQ(wide[i], one_by_one[i]);
    EXPECT_EQ(wide[hd + i], 7.0f);
    EXPECT_EQ(wide[2 * hd + i], one_by_one[i]);
  }
}

}  // namespace
}  // namespace llmhost::ops_norm_test
