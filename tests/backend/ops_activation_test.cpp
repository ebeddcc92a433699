// Gated activations and soft-capping at known values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/ops_activation.h"

namespace llmhost::ops_activation_test {
namespace {

TEST(OpsActivationTest, KnownValues) {
  EXPECT_FLOAT_EQ(cpu::ApplyActivation(Activation::kSilu, 0), 0);
  EXPECT_NEAR(cpu::ApplyActivation(Activation::kSilu, 1), 0.7310585786, 1e-7);
  EXPECT_NEAR(cpu::ApplyActivation(Activation::kSilu, -2), -0.2384058440, 1e-7);
  // gelu_pytorch_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715))
  EXPECT_NEAR(cpu::ApplyActivation(Activation::kGeluTanh, 1), 0.8411919906, 1e-7);
  EXPECT_NEAR(cpu::ApplyActivation(Activation::kGeluTanh, -3), -0.0036373920, 1e-8);
  EXPECT_NEAR(cpu::ApplyActivation(Activation::kGeluTanh, 10), 10, 1e-6);
}

TEST(OpsActivationTest, GatedRowsWithStrides) {
  // A fused [gate | up] row of 2 x 3 values, two rows; output dense 3 wide.
  const std::vector<float> gu = {1, 0, -2, 2, 3, 4,
                                 0.5f, 1, 1, -1, 1, 2};
  std::vector<float> out(6);
  cpu::GatedActivation(Activation::kSilu, gu.data(), 6, gu.data() + 3, 6, 2, 3, out.data(), 3, false, nullptr);
  EXPECT_NEAR(out[0], 0.7310586 * 2, 1e-6);
  EXPECT_NEAR(out[1], 0, 1e-7);
  EXPECT_NEAR(out[2], -0.2384058 * 4, 1e-6);
  EXPECT_NEAR(out[3], 0.5 / (1 + std::exp(-0.5)) * -1, 1e-6);
}

// The fast path (AVX2 where present) against the reference loops over a
// range that covers exp's clamps and the tails of both activations.
TEST(OpsActivationTest, FastPathMatchesReference) {
  const int64_t n = 4003;  // not a multiple of 8: the tail runs too
  std::vector<float> g(n), u(n, 1.0f), ref(n), fast(n);
  for (int64_t i = 0; i < n; ++i) g[i] = -100.0f + 200.0f * i / (n - 1);
  for (Activation act : {Activation::kSilu, Activation::kGeluTanh}) {
    cpu::GatedActivation(act, g.data(), n, u.data(), n, 1, n, ref.data(), n, false, nullptr);
    ThreadPool pool(2);
    cpu::GatedActivation(act, g.data(), n, u.data(), n, 1, n, fast.data(), n, true, &pool);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(fast[i], ref[i], 2e-6 * std::max(1.0f, std::fabs(ref[i]))) << g[i];
    }
  }
}

TEST(OpsActivationTest, Softcap) {
  std::vector<float> x = {0, 30, -1000, 1};
  cpu::Softcap(x.data(), 4, 30);
  EXPECT_EQ(x[0], 0);
  EXPECT_NEAR(x[1], 30 * std::tanh(1.0), 1e-5);
  EXPECT_NEAR(x[2], -30, 1e-5);
  EXPECT_NEAR(x[3], 30 * std::tanh(1.0 / 30), 1e-6);
}

}  // namespace
}  // namespace llmhost::ops_activation_test
