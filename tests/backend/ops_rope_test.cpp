// RoPE: exact rotations, both pairings, GGUF's Q/K permutation (interleaved
// RoPE on permuted rows equals half-split RoPE on the original rows),
// partial rotary and attention scaling.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/ops_rope.h"

namespace llmhost::ops_rope_test {
namespace {

RopeParams Params(int64_t heads, int64_t hd, int64_t rot, RopePairing pairing) {
  RopeParams p;
  p.n_heads = heads;
  p.head_dim = hd;
  p.rot_dim = rot;
  p.row_stride = heads * hd;
  p.pairing = pairing;
  return p;
}

TEST(OpsRopeTest, HalfSplitRotatesPairsIAndIPlusHalf) {
  std::vector<float> x = {1, 2, 3, 4};  // pairs (1, 3) and (2, 4)
  const std::vector<float> inv = {1.0f, 0.25f};
  const std::vector<int32_t> pos = {3};
  cpu::Rope(x.data(), 1, pos.data(), inv.data(), Params(1, 4, 4, RopePairing::kHalfSplit), nullptr);
  const double a0 = 3.0, a1 = 0.75;
  EXPECT_NEAR(x[0], 1 * std::cos(a0) - 3 * std::sin(a0), 1e-6);
  EXPECT_NEAR(x[2], 3 * std::cos(a0) + 1 * std::sin(a0), 1e-6);
  EXPECT_NEAR(x[1], 2 * std::cos(a1) - 4 * std::sin(a1), 1e-6);
  EXPECT_NEAR(x[3], 4 * std::cos(a1) + 2 * std::sin(a1), 1e-6);
}

TEST(OpsRopeTest, InterleavedRotatesAdjacentPairs) {
  std::vector<float> x = {1, 2, 3, 4};  // pairs (1, 2) and (3, 4)
  const std::vector<float> inv = {1.0f, 0.25f};
  const std::vector<int32_t> pos = {3};
  cpu::Rope(x.data(), 1, pos.data(), inv.data(), Params(1, 4, 4, RopePairing::kInterleaved), nullptr);
  EXPECT_NEAR(x[0], 1 * std::cos(3.0) - 2 * std::sin(3.0), 1e-6);
  EXPECT_NEAR(x[1], 1 * std::sin(3.0) + 2 * std::cos(3.0), 1e-6);
  EXPECT_NEAR(x[2], 3 * std::cos(0.75) - 4 * std::sin(0.75), 1e-6);
  EXPECT_NEAR(x[3], 3 * std::sin(0.75) + 4 * std::cos(0.75), 1e-6);
}

// llama.cpp's converter stores row 2i + j of a GGUF head as row j * half + i
// of the Hugging Face head; rotating the stored rows with interleaved pairs
// must give the permuted half-split rotation.
TEST(OpsRopeTest, GgufPermutationMakesPairingsAgree) {
  const int64_t heads = 3, hd = 16, half = hd / 2, tokens = 5;
  std::vector<float> inv(half);
  for (int64_t i = 0; i < half; ++i) inv[i] = std::pow(10000.0f, -2.0f * i / hd);
  std::vector<int32_t> pos = {0, 1, 7, 100, 4095};
  std::vector<float> hf(tokens * heads * hd), gguf(hf.size());
  for (size_t i = 0; i < hf.size(); ++i) hf[i] = std::cos(1.3f * i) + 0.1f * (i % 7);
  auto permuted = [&](int64_t t, int64_t h, int64_t r) {  // gguf row r -> hf row
    return hf[(t * heads + h) * hd + (r % 2) * half + r / 2];
  };
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < hd; ++r) gguf[(t * heads + h) * hd + r] = permuted(t, h, r);
  cpu::Rope(hf.data(), tokens, pos.data(), inv.data(), Params(heads, hd, hd, RopePairing::kHalfSplit), nullptr);
  ThreadPool pool(2);
  cpu::Rope(gguf.data(), tokens, pos.data(), inv.data(), Params(heads, hd, hd, RopePairing::kInterleaved), &pool);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < hd; ++r) {
        EXPECT_EQ(gguf[(t * heads + h) * hd + r], permuted(t, h, r)) << t << " " << h << " " << r;
      }
}

TEST(OpsRopeTest, PartialRotaryScalingAndStride) {
  // Two heads of 8, rotating the first 4 dims, rows 20 wide (a fused qkv row).
  std::vector<float> x(2 * 20);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + i;
  const std::vector<float> orig = x;
  const std::vector<float> inv = {0.5f, 0.125f};
  const std::vector<int32_t> pos = {0, 2};
  RopeParams p = Params(2, 8, 4, RopePairing::kHalfSplit);
  p.row_stride = 20;
  p.attention_scaling = 2.0f;
  cpu::Rope(x.data(), 2, pos.data(), inv.data(), p, nullptr);
  // Position 0: no rotation, only the scaling of the rotated dims.
  for (int d = 0; d < 4; ++d) EXPECT_FLOAT_EQ(x[d], 2 * orig[d]);
  for (int d = 4; d < 8; ++d) EXPECT_EQ(x[d], orig[d]);
  for (int d = 16; d < 20; ++d) EXPECT_EQ(x[d], orig[d]);  // beyond the heads
  // Position 2, head 1, pair (8, 10) at angle 1.0.
  EXPECT_NEAR(x[20 + 8], 2 * (orig[28] * std::cos(1.0) - orig[30] * std::sin(1.0)), 1e-5);
  EXPECT_EQ(x[20 + 12], orig[32]);
}

}  // namespace
}  // namespace llmhost::ops_rope_test
