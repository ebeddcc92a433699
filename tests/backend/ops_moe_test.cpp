// MoE routing and dispatch helpers: top-k of the softmax, renormalisation,
// tie order; row gathers and weighted scatter-adds.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/ops_elementwise.h"
#include "backend/cpu/ops_moe.h"

namespace llmhost::ops_moe_test {
namespace {

TEST(OpsMoeTest, TopKOfSoftmaxWithAndWithoutRenormalisation) {
  const std::vector<float> logits = {0, 1, 3, 2,   // row 0: experts 2, 3 win
                                     5, 5, 0, 5};  // row 1: a three-way tie
  std::vector<int32_t> ids(4);
  std::vector<float> w(4);
  cpu::TopKRouting(logits.data(), 2, 4, 2, /*renormalize=*/true, ids.data(), w.data());
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 3);
  EXPECT_NEAR(w[0], std::exp(3.0) / (std::exp(3.0) + std::exp(2.0)), 1e-6);
  EXPECT_NEAR(w[0] + w[1], 1.0, 1e-6);
  EXPECT_EQ(ids[2], 0);  // ties: lower expert id first
  EXPECT_EQ(ids[3], 1);
  EXPECT_NEAR(w[2], 0.5, 1e-6);
  cpu::TopKRouting(logits.data(), 1, 4, 2, /*renormalize=*/false, ids.data(), w.data());
  const double z = 1 + std::exp(1.0) + std::exp(3.0) + std::exp(2.0);
  EXPECT_NEAR(w[0], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(w[1], std::exp(2.0) / z, 1e-6);
}

TEST(OpsMoeTest, GatherAndScatterAdd) {
  const std::vector<float> src = {1, 2, 3, 4, 5, 6};  // 3 rows of 2
  const std::vector<int32_t> rows = {2, 0};
  std::vector<float> g(4);
  cpu::GatherRows(src.data(), 2, rows.data(), 2, g.data());
  EXPECT_EQ(g, (std::vector<float>{5, 6, 1, 2}));
  std::vector<float> dst(6, 1.0f);
  const std::vector<float> scales = {0.5f, 2.0f};
  cpu::ScatterAddRows(g.data(), 2, rows.data(), scales.data(), 2, dst.data());
  EXPECT_EQ(dst, (std::vector<float>{3, 5, 1, 1, 3.5f, 4}));
}

}  // namespace
}  // namespace llmhost::ops_moe_test
