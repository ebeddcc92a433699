// RoPE settings in both conventions: transformers-5 rope_parameters (covered
// by the fixtures in hf_config_test.cpp) and legacy rope_theta + rope_scaling,
// written here as real repositories write them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "formats/hf_config.h"

namespace llmhost::hf_rope_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A minimal valid config with `extra` fields appended.
Result<ModelConfig> Parse(const std::string& extra, int layers = 2,
                          const std::string& type = "llama") {
  std::string json = R"({"model_type": ")" + type + R"(", "hidden_size": 64,
      "num_hidden_layers": )" + std::to_string(layers) + R"(, "num_attention_heads": 4,
      "vocab_size": 100)" + (extra.empty() ? "" : ", " + extra) + "}";
  return ParseModelConfig(json, "config.json");
}

TEST(HfRope, DefaultsWithoutAnyRopeField) {
  auto c = Parse("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope.type, RopeType::kDefault);
  EXPECT_EQ(c->rope.theta, 10000.0);
  EXPECT_EQ(c->rope.factor, 1.0);
  auto null_scaling = Parse(R"("rope_theta": 1000000.0, "rope_scaling": null)");
  ASSERT_TRUE(null_scaling.ok());
  EXPECT_EQ(null_scaling->rope.type, RopeType::kDefault);
  EXPECT_EQ(null_scaling->rope.theta, 1e6);
}

TEST(HfRope, LegacyLlama31) {
  auto c = Parse(R"("rope_theta": 500000.0, "max_position_embeddings": 131072,
      "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope.type, RopeType::kLlama3);
  EXPECT_EQ(c->rope.type_name, "llama3");
  EXPECT_EQ(c->rope.theta, 500000.0);
  EXPECT_EQ(c->rope.factor, 8.0);
  EXPECT_EQ(c->rope.low_freq_factor, 1.0);
  EXPECT_EQ(c->rope.high_freq_factor, 4.0);
  EXPECT_EQ(c->rope.original_max_position_embeddings, 8192);
  EXPECT_EQ(c->max_position_embeddings, 131072);
}

TEST(HfRope, LegacyLinearDynamicYarnWithTypeKey) {
  auto lin = Parse(R"("rope_scaling": {"type": "linear", "factor": 2.0})");
  ASSERT_TRUE(lin.ok()) << lin.status().ToString();
  EXPECT_EQ(lin->rope.type, RopeType::kLinear);
  EXPECT_EQ(lin->rope.factor, 2.0);
  auto dyn = Parse(R"("rope_scaling": {"type": "dynamic", "factor": 4})");
  ASSERT_TRUE(dyn.ok());
  EXPECT_EQ(dyn->rope.type, RopeType::kDynamic);
  EXPECT_EQ(dyn->rope.factor, 4.0);
  // Qwen2.5 long-context style.
  auto yarn = Parse(R"("rope_theta": 1000000.0, "rope_scaling": {"type": "yarn",
      "factor": 4.0, "original_max_position_embeddings": 32768})");
  ASSERT_TRUE(yarn.ok());
  EXPECT_EQ(yarn->rope.type, RopeType::kYarn);
  EXPECT_EQ(yarn->rope.theta, 1e6);
  EXPECT_EQ(yarn->rope.original_max_position_embeddings, 32768);
  EXPECT_EQ(yarn->rope.beta_fast, 32.0);
  EXPECT_EQ(yarn->rope.beta_slow, 1.0);
  EXPECT_FALSE(yarn->rope.attention_factor.has_value());
  // DeepSeek-style yarn extras.
  auto ds = Parse(R"("rope_scaling": {"type": "yarn", "factor": 40, "beta_fast": 16,
      "beta_slow": 2, "mscale": 1.0, "mscale_all_dim": 0.707, "attention_factor": 1.2,
      "truncate": false})");
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->rope.beta_fast, 16.0);
  EXPECT_EQ(ds->rope.beta_slow, 2.0);
  EXPECT_EQ(ds->rope.mscale, 1.0);
  EXPECT_EQ(ds->rope.mscale_all_dim, 0.707);
  EXPECT_EQ(ds->rope.attention_factor, 1.2);
  EXPECT_FALSE(ds->rope.truncate);
}

TEST(HfRope, Transformers5SingleDictYarn) {
  auto c = Parse(R"("rope_parameters": {"rope_type": "yarn", "rope_theta": 150000.0,
      "factor": 32.0, "original_max_position_embeddings": 4096, "beta_fast": 32,
      "beta_slow": 1})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope.type, RopeType::kYarn);
  EXPECT_EQ(c->rope.theta, 150000.0);
  EXPECT_EQ(c->rope.factor, 32.0);
  EXPECT_TRUE(c->rope_by_layer_type.empty());
}

TEST(HfRope, LegacyPhi3LongRope) {
  auto c = Parse(R"("rope_theta": 10000.0, "original_max_position_embeddings": 4096,
      "partial_rotary_factor": 0.5, "rope_scaling": {"type": "su",
      "short_factor": [1.0, 1.1], "long_factor": [2.0, 3.5]})", 2, "phi3");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope.type, RopeType::kLongRope);
  EXPECT_EQ(c->rope.type_name, "longrope");
  EXPECT_THAT(c->rope.short_factor, ElementsAre(1.0, 1.1));
  EXPECT_THAT(c->rope.long_factor, ElementsAre(2.0, 3.5));
  EXPECT_EQ(c->rope.original_max_position_embeddings, 4096);
  EXPECT_EQ(c->rope.partial_rotary_factor, 0.5);
  EXPECT_EQ(c->partial_rotary_factor, 0.5);
}

TEST(HfRope, LegacyGemma3LocalBaseAndPattern) {
  auto c = Parse(R"("rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
      "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "sliding_window": 1024,
      "sliding_window_pattern": 6)", 12, "gemma3_text");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->layer_types.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    bool global = i == 5 || i == 11;
    EXPECT_EQ(c->IsSlidingLayer(i), !global) << i;
    const RopeConfig& r = c->RopeForLayer(i);
    EXPECT_EQ(r.theta, global ? 1e6 : 10000.0) << i;
    EXPECT_EQ(r.type, global ? RopeType::kLinear : RopeType::kDefault) << i;
    EXPECT_EQ(r.factor, global ? 8.0 : 1.0) << i;
  }
  // Without a pattern gemma3 defaults to 6; without rope_theta to 1e6.
  auto d = Parse(R"("sliding_window": 512)", 6, "gemma3_text");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->rope.theta, 1e6);
  EXPECT_FALSE(d->IsSlidingLayer(5));
  EXPECT_TRUE(d->IsSlidingLayer(4));
}

TEST(HfRope, UnknownTypeIsKeptNotRejected) {
  auto c = Parse(R"("rope_scaling": {"rope_type": "proportional", "factor": 2.0})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope.type, RopeType::kOther);
  EXPECT_EQ(c->rope.type_name, "proportional");
  auto m = Parse(R"("rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]})");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->rope.type, RopeType::kDefault);
}

TEST(HfRope, Errors) {
  auto llama3 = Parse(R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0,
      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})");
  EXPECT_EQ(llama3.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(llama3.status().message(), HasSubstr("rope_scaling: rope type 'llama3' requires 'low_freq_factor'"));
  auto lin = Parse(R"("rope_parameters": {"rope_type": "linear"})");
  EXPECT_THAT(lin.status().message(), HasSubstr("requires 'factor'"));
  auto lr = Parse(R"("rope_scaling": {"type": "longrope", "short_factor": [1.0]})");
  EXPECT_THAT(lr.status().message(), HasSubstr("requires 'long_factor'"));
  auto theta = Parse(R"("rope_theta": -5)");
  EXPECT_THAT(theta.status().message(), HasSubstr("rope_theta must be positive"));
  auto type = Parse(R"("rope_scaling": {"type": 3})");
  EXPECT_THAT(type.status().message(), HasSubstr("rope_scaling: 'type' must be a string"));
  auto notobj = Parse(R"("rope_scaling": [1])");
  EXPECT_THAT(notobj.status().message(), HasSubstr("rope_scaling is not an object"));
  auto partial = Parse(R"("partial_rotary_factor": 1.5)");
  EXPECT_THAT(partial.status().message(), HasSubstr("partial_rotary_factor"));
}

}  // namespace
}  // namespace llmhost::hf_rope_test
