// MLX quantization metadata with per-module overrides, and generation_config.json.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "formats/generation_config.h"
#include "formats/mlx_quant.h"
#include "test_util.h"

namespace llmhost::mlx_quant_generation_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Result<std::optional<MlxQuantization>> ParseQ(const std::string& json) {
  return ParseMlxQuantization(nlohmann::json::parse(json), "config.json");
}

TEST(MlxQuant, PerModuleOverrides) {
  // As mlx-lm writes mixed-precision conversions.
  auto r = ParseQ(R"({"quantization": {"group_size": 64, "bits": 4,
      "model.embed_tokens": {"group_size": 32, "bits": 8},
      "model.layers.0.mlp.gate": {"bits": 8, "group_size": 64},
      "lm_head": false}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  const MlxQuantization& q = **r;
  EXPECT_EQ(q.defaults, (MlxQuantParams{4, 64, "affine"}));
  EXPECT_EQ(q.overrides.size(), 3u);
  EXPECT_EQ(q.ForModule("model.embed_tokens"), (MlxQuantParams{8, 32, "affine"}));
  EXPECT_EQ(q.ForModule("model.embed_tokens.weight"), (MlxQuantParams{8, 32, "affine"}));
  EXPECT_EQ(q.ForModule("model.layers.0.mlp.gate"), (MlxQuantParams{8, 64, "affine"}));
  EXPECT_FALSE(q.ForModule("lm_head").has_value());
  EXPECT_FALSE(q.ForModule("lm_head.weight").has_value());
  EXPECT_EQ(q.ForModule("model.layers.1.mlp.gate"), (MlxQuantParams{4, 64, "affine"}));
}

TEST(MlxQuant, ModesSourcesAndAbsence) {
  auto mx = ParseQ(R"({"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}})");
  ASSERT_TRUE(mx.ok() && mx->has_value());
  EXPECT_EQ((*mx)->defaults.mode, "mxfp4");
  // Only quantization_config, without a quant_method: still MLX.
  auto qc = ParseQ(R"({"quantization_config": {"group_size": 128, "bits": 3}})");
  ASSERT_TRUE(qc.ok() && qc->has_value());
  EXPECT_EQ((*qc)->defaults, (MlxQuantParams{3, 128, "affine"}));
  auto none = ParseQ(R"({"hidden_size": 4})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto gptq = ParseQ(R"({"quantization_config": {"quant_method": "gptq", "bits": 4}})");
  ASSERT_TRUE(gptq.ok());
  EXPECT_FALSE(gptq->has_value());
}

TEST(MlxQuant, BadValues) {
  auto bits = ParseQ(R"({"quantization": {"group_size": 64, "bits": 9}})");
  EXPECT_EQ(bits.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bits.status().message(), HasSubstr("bits 9 not in 1..8"));
  auto str = ParseQ(R"({"quantization": {"group_size": "64", "bits": 4}})");
  EXPECT_THAT(str.status().message(), HasSubstr("'group_size' is not an integer"));
  auto layer = ParseQ(R"({"quantization": {"group_size": 64, "bits": 4, "m.x": {"bits": 0}}})");
  EXPECT_THAT(layer.status().message(), HasSubstr("quantization['m.x']: bits 0"));
}

TEST(GenerationConfig, Fixtures) {
  auto l = LoadGenerationConfig(testing::TestDataDir() + "/formats/llama3-tiny");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->bos_token_id, 900);
  EXPECT_THAT(l->eos_token_ids, ElementsAre(904));
  EXPECT_FALSE(l->temperature.has_value());
  auto q = LoadGenerationConfig(testing::TestDataDir() + "/formats/qwen2-tiny");
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->bos_token_id.has_value());
  EXPECT_THAT(q->eos_token_ids, ElementsAre(902));
  auto g = LoadGenerationConfig(testing::TestDataDir() + "/formats/gemma3-tiny");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->pad_token_id, 0);
  auto mlx = LoadGenerationConfig(testing::TestDataDir() + "/formats/llama3-tiny-mlx4");
  EXPECT_EQ(mlx.status().code(), StatusCode::kNotFound);
}

TEST(GenerationConfig, SamplingFields) {
  // As Qwen3 ships it.
  auto g = ParseGenerationConfig(R"({"bos_token_id": 151643, "do_sample": true,
      "eos_token_id": [151645, 151643], "pad_token_id": 151643, "temperature": 0.6,
      "top_k": 20, "top_p": 0.95, "min_p": 0, "repetition_penalty": 1.05,
      "max_new_tokens": 2048, "max_length": 40960})", "generation_config.json");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_THAT(g->eos_token_ids, ElementsAre(151645, 151643));
  EXPECT_EQ(g->bos_token_id, 151643);
  EXPECT_EQ(g->pad_token_id, 151643);
  EXPECT_EQ(g->do_sample, true);
  EXPECT_EQ(g->temperature, 0.6);
  EXPECT_EQ(g->top_k, 20);
  EXPECT_EQ(g->top_p, 0.95);
  EXPECT_EQ(g->min_p, 0.0);
  EXPECT_EQ(g->repetition_penalty, 1.05);
  EXPECT_EQ(g->max_new_tokens, 2048);
  EXPECT_EQ(g->max_length, 40960);
  EXPECT_EQ(g->raw["top_k"], 20);
}

TEST(GenerationConfig, Errors) {
  auto t = ParseGenerationConfig(R"({"temperature": "hot"})", "generation_config.json");
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("generation_config.json: 'temperature' must be a number"));
  EXPECT_FALSE(ParseGenerationConfig("[1]", "g.json").ok());
  EXPECT_FALSE(ParseGenerationConfig("{", "g.json").ok());
  EXPECT_FALSE(ParseGenerationConfig(R"({"top_k": 1.5})", "g.json").ok());
}

}  // namespace
}  // namespace llmhost::mlx_quant_generation_test
