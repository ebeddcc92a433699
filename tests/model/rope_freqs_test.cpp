// RoPE frequencies of every rope type, against closed forms from the
// transformers definitions (modeling_rope_utils) and the papers' limits.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "model/rope_freqs.h"

namespace llmhost::rope_freqs_test {
namespace {

double Default(double theta, int64_t dim, int64_t i) {
  return std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
}

RopeFrequencies Compute(const RopeConfig& r, int64_t head_dim, int64_t max_pos, int64_t seq_len = 0) {
  auto f = ComputeRopeFrequencies(r, head_dim, max_pos, seq_len);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? *f : RopeFrequencies{};
}

TEST(RopeFreqsTest, DefaultAndPartialRotary) {
  RopeConfig r;
  r.theta = 10000;
  RopeFrequencies f = Compute(r, 64, 4096);
  ASSERT_EQ(f.inv_freq.size(), 32u);
  EXPECT_EQ(f.rot_dim, 64);
  for (int64_t i = 0; i < 32; ++i) EXPECT_NEAR(f.inv_freq[i], Default(1e4, 64, i), 1e-6 * Default(1e4, 64, i));
  r.partial_rotary_factor = 0.25;  // Phi-style partial rotation: 16 of 64 dims
  f = Compute(r, 64, 4096);
  EXPECT_EQ(f.rot_dim, 16);
  ASSERT_EQ(f.inv_freq.size(), 8u);
  EXPECT_NEAR(f.inv_freq[1], Default(1e4, 16, 1), 1e-7);
  EXPECT_EQ(f.attention_scaling, 1.0f);
}

TEST(RopeFreqsTest, LinearDividesByFactor) {
  RopeConfig r;
  r.type = RopeType::kLinear;
  r.factor = 4;
  RopeFrequencies f = Compute(r, 32, 4096);
  for (int64_t i = 0; i < 16; ++i) EXPECT_NEAR(f.inv_freq[i], Default(1e4, 32, i) / 4, 1e-6 * Default(1e4, 32, i));
}

TEST(RopeFreqsTest, DynamicNtkGrowsTheBaseBeyondTheContext) {
  RopeConfig r;
  r.type = RopeType::kDynamic;
  r.factor = 2;
  const int64_t dim = 32, max_pos = 1024;
  EXPECT_TRUE(RopeDependsOnLength(r));
  RopeFrequencies within = Compute(r, dim, max_pos, 512);
  EXPECT_NEAR(within.inv_freq[3], Default(1e4, dim, 3), 1e-6);  // unchanged inside the context
  RopeFrequencies beyond = Compute(r, dim, max_pos, 2048);
  // base' = base * (factor * len / max - (factor - 1)) ** (dim / (dim - 2)) = base * 3 ** (32/30)
  const double base = 1e4 * std::pow(3.0, 32.0 / 30.0);
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_NEAR(beyond.inv_freq[i], Default(base, dim, i), 1e-6 * Default(base, dim, i)) << i;
  }
}

TEST(RopeFreqsTest, Llama3KeepsHighFrequenciesAndDividesLowOnes) {
  RopeConfig r;  // Llama 3.1's published settings
  r.type = RopeType::kLlama3;
  r.theta = 500000;
  r.factor = 8;
  r.low_freq_factor = 1;
  r.high_freq_factor = 4;
  r.original_max_position_embeddings = 8192;
  RopeFrequencies f = Compute(r, 128, 131072);
  ASSERT_EQ(f.inv_freq.size(), 64u);
  int high = 0, low = 0, medium = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const double inv = Default(5e5, 128, i);
    const double wavelen = 2 * std::numbers::pi / inv;
    if (wavelen < 8192.0 / 4) {
      EXPECT_NEAR(f.inv_freq[i], inv, 1e-6 * inv) << i;  // high frequency: untouched
      ++high;
    } else if (wavelen > 8192.0) {
      EXPECT_NEAR(f.inv_freq[i], inv / 8, 1e-6 * inv) << i;  // low frequency: / factor
      ++low;
    } else {
      const double smooth = (8192.0 / wavelen - 1) / 3;
      EXPECT_NEAR(f.inv_freq[i], (1 - smooth) * inv / 8 + smooth * inv, 1e-6 * inv) << i;
      EXPECT_LT(f.inv_freq[i], inv);
      EXPECT_GT(f.inv_freq[i], inv / 8);
      ++medium;
    }
  }
  EXPECT_GT(high, 0);
  EXPECT_GT(low, 0);
  EXPECT_GT(medium, 0);
}

TEST(RopeFreqsTest, YarnRampsFromExtrapolationToInterpolation) {
  RopeConfig r;
  r.type = RopeType::kYarn;
  r.factor = 4;
  r.original_max_position_embeddings = 4096;
  const int64_t dim = 128;
  RopeFrequencies f = Compute(r, dim, 16384);
  EXPECT_NEAR(f.attention_scaling, 0.1 * std::log(4.0) + 1.0, 1e-6);
  // Correction range: dims below low keep the original frequency, dims above
  // high are interpolated (/ factor), with a linear ramp between.
  auto corr = [&](double rot) {
    return dim * std::log(4096 / (rot * 2 * std::numbers::pi)) / (2 * std::log(1e4));
  };
  const double low = std::floor(corr(32)), high = std::ceil(corr(1));
  for (int64_t i = 0; i < dim / 2; ++i) {
    const double inv = Default(1e4, dim, i);
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    EXPECT_NEAR(f.inv_freq[i], inv / 4 * ramp + inv * (1 - ramp), 2e-6 * inv) << i;
  }
  EXPECT_NEAR(f.inv_freq[0], 1.0, 1e-6);
  r.attention_factor = 0.5;
  EXPECT_EQ(Compute(r, dim, 16384).attention_scaling, 0.5f);
}

TEST(RopeFreqsTest, LongRopeSwitchesFactorsWithLength) {
  RopeConfig r;
  r.type = RopeType::kLongRope;
  r.original_max_position_embeddings = 4096;
  r.short_factor.assign(8, 1.0);
  r.long_factor.assign(8, 2.0);
  EXPECT_TRUE(RopeDependsOnLength(r));
  RopeFrequencies s = Compute(r, 16, 131072, 100);
  RopeFrequencies l = Compute(r, 16, 131072, 5000);
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(s.inv_freq[i], Default(1e4, 16, i), 1e-6);
    EXPECT_NEAR(l.inv_freq[i], Default(1e4, 16, i) / 2, 1e-6);
  }
  EXPECT_NEAR(s.attention_scaling, std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-6);
  r.long_factor.assign(7, 2.0);
  EXPECT_FALSE(ComputeRopeFrequencies(r, 16, 131072, 5000).ok());
}

TEST(RopeFreqsTest, UnknownTypeIsNotSupported) {
  RopeConfig r;
  r.type = RopeType::kOther;
  r.type_name = "mrope-plus";
  auto f = ComputeRopeFrequencies(r, 16, 1024, 0);
  EXPECT_EQ(f.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(f.status().message().find("mrope-plus"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::rope_freqs_test
