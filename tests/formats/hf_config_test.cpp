// config.json parsing against the fixtures' files (copied into tests/data so
// these run without ../shared); expected values read off the JSON by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/hf_config.h"
#include "test_util.h"

namespace llmhost::hf_config_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ModelConfig Load(const std::string& fixture) {
  auto r = LoadModelConfig(testing::TestDataDir() + "/formats/" + fixture);
  EXPECT_TRUE(r.ok()) << fixture << ": " << r.status().ToString();
  return r.ok() ? *r : ModelConfig{};
}

const std::vector<std::string> kFull2 = {"full_attention", "full_attention"};

TEST(HfConfig, Llama3Tiny) {
  ModelConfig c = Load("llama3-tiny");
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_THAT(c.architectures, ElementsAre("LlamaForCausalLM"));
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 128);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.vocab_size, 907);
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.hidden_act, "silu");
  EXPECT_EQ(c.dtype, "bfloat16");
  EXPECT_THAT(c.bos_token_ids, ElementsAre(900));
  EXPECT_THAT(c.eos_token_ids, ElementsAre(904));
  EXPECT_FALSE(c.pad_token_id.has_value());
  EXPECT_EQ(c.layer_types, kFull2);
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.rope.type, RopeType::kLlama3);
  EXPECT_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(c.rope.factor, 8.0);
  EXPECT_EQ(c.rope.low_freq_factor, 1.0);
  EXPECT_EQ(c.rope.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 64);
  EXPECT_FALSE(c.IsMoe());
  EXPECT_FALSE(c.mlx_quantization.has_value());
  EXPECT_EQ(c.raw["transformers_version"], "5.17.0");
}

TEST(HfConfig, MistralSlidingWindow) {
  ModelConfig c = Load("mistral-tiny-swa");
  EXPECT_EQ(c.model_type, "mistral");
  EXPECT_EQ(c.sliding_window, 16);
  EXPECT_THAT(c.layer_types, ElementsAre("sliding_attention", "sliding_attention"));
  EXPECT_TRUE(c.IsSlidingLayer(1));
  EXPECT_EQ(c.rope.type, RopeType::kDefault);
  EXPECT_EQ(c.rope.theta, 1e6);
  EXPECT_EQ(c.vocab_size, 910);
  EXPECT_THAT(c.bos_token_ids, ElementsAre(901));
  EXPECT_THAT(c.eos_token_ids, ElementsAre(902));
}

TEST(HfConfig, Qwen2TiedNoBos) {
  ModelConfig c = Load("qwen2-tiny");
  EXPECT_EQ(c.model_type, "qwen2");
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.vocab_size, 1024);
  EXPECT_EQ(c.head_dim, 16);  // 64 / 4, no head_dim in the file
  EXPECT_TRUE(c.bos_token_ids.empty());
  EXPECT_THAT(c.eos_token_ids, ElementsAre(902));
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.layer_types, kFull2);
  EXPECT_EQ(c.rope.theta, 1e6);
}

TEST(HfConfig, Qwen3HeadDim) {
  ModelConfig c = Load("qwen3-tiny");
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_EQ(c.head_dim, 32);  // != 64 / 4
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.vocab_size, 909);
}

TEST(HfConfig, Qwen3Moe) {
  ModelConfig c = Load("qwen3moe-tiny");
  EXPECT_EQ(c.model_type, "qwen3_moe");
  EXPECT_TRUE(c.IsMoe());
  EXPECT_EQ(c.num_experts, 8);  // from num_local_experts
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.moe_intermediate_size, 32);
  EXPECT_EQ(c.decoder_sparse_step, 1);
  EXPECT_TRUE(c.mlp_only_layers.empty());
  EXPECT_EQ(c.head_dim, 16);
}

TEST(HfConfig, QwenMoeNumExpertsSpelling) {
  auto c = ParseModelConfig(R"({"model_type": "qwen3_moe", "hidden_size": 8,
      "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10,
      "num_experts": 128, "num_experts_per_tok": 8, "mlp_only_layers": [0]})", "c.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_experts, 128);
  EXPECT_THAT(c->mlp_only_layers, ElementsAre(0));
  EXPECT_FALSE(c->norm_topk_prob);  // the transformers default
}

TEST(HfConfig, Phi3) {
  ModelConfig c = Load("phi3-tiny");
  EXPECT_EQ(c.model_type, "phi3");
  EXPECT_EQ(c.partial_rotary_factor, 1.0);
  EXPECT_EQ(c.rope.theta, 10000.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 4096);  // top-level field
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_THAT(c.eos_token_ids, ElementsAre(905));
}

TEST(HfConfig, Gemma3PerLayerTypeRope) {
  ModelConfig c = Load("gemma3-tiny");
  EXPECT_EQ(c.model_type, "gemma3_text");
  // layer_types wins over _sliding_window_pattern (6 would make both sliding).
  EXPECT_EQ(c.sliding_window_pattern, 6);
  EXPECT_THAT(c.layer_types, ElementsAre("sliding_attention", "full_attention"));
  EXPECT_EQ(c.sliding_window, 8);
  EXPECT_EQ(c.query_pre_attn_scalar, 16.0);
  EXPECT_FALSE(c.final_logit_softcapping.has_value());
  EXPECT_FALSE(c.attn_logit_softcapping.has_value());
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_THAT(c.bos_token_ids, ElementsAre(902));
  EXPECT_THAT(c.eos_token_ids, ElementsAre(905));
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_EQ(c.rope.theta, 1e6);
  EXPECT_EQ(c.RopeForLayer(0).theta, 10000.0);
  EXPECT_EQ(c.RopeForLayer(1).theta, 1e6);
  EXPECT_EQ(c.rope_by_layer_type.size(), 2u);
}

TEST(HfConfig, MlxFixtures) {
  ModelConfig l = Load("llama3-tiny-mlx4");
  ASSERT_TRUE(l.mlx_quantization.has_value());
  EXPECT_EQ(l.mlx_quantization->defaults.bits, 4);
  EXPECT_EQ(l.mlx_quantization->defaults.group_size, 32);
  EXPECT_EQ(l.mlx_quantization->defaults.mode, "affine");
  auto down = l.mlx_quantization->ForModule("model.layers.0.mlp.down_proj");
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->bits, 4);
  EXPECT_EQ(l.dtype, "");  // null in the file
  EXPECT_EQ(l.rope.type, RopeType::kDefault);
  EXPECT_EQ(l.rope.theta, 500000.0);
  EXPECT_EQ(l.num_labels, 2);  // id2label has two entries

  ModelConfig q = Load("qwen3-tiny-mlx8");
  ASSERT_TRUE(q.mlx_quantization.has_value());
  EXPECT_EQ(q.mlx_quantization->defaults.bits, 8);
  EXPECT_EQ(q.mlx_quantization->defaults.group_size, 64);
  EXPECT_TRUE(q.tie_word_embeddings);
  EXPECT_EQ(q.head_dim, 32);
}

TEST(HfConfig, Encoders) {
  ModelConfig b = Load("bert-tiny-embed");
  EXPECT_EQ(b.model_type, "bert");
  EXPECT_EQ(b.vocab_size, 1200);
  EXPECT_EQ(b.max_position_embeddings, 512);
  EXPECT_DOUBLE_EQ(b.layer_norm_eps, 1e-12);
  EXPECT_EQ(b.type_vocab_size, 2);
  EXPECT_EQ(b.hidden_act, "gelu");
  EXPECT_EQ(b.pad_token_id, 0);
  EXPECT_TRUE(b.bos_token_ids.empty());
  EXPECT_TRUE(b.tie_word_embeddings);
  ModelConfig x = Load("xlmr-tiny-rerank");
  EXPECT_EQ(x.model_type, "xlm-roberta");
  EXPECT_THAT(x.architectures, ElementsAre("XLMRobertaForSequenceClassification"));
  EXPECT_EQ(x.num_labels, 1);
  EXPECT_EQ(x.vocab_size, 1500);
  EXPECT_EQ(x.max_position_embeddings, 514);
  EXPECT_EQ(x.type_vocab_size, 1);
  EXPECT_EQ(x.pad_token_id, 1);
  EXPECT_THAT(x.bos_token_ids, ElementsAre(0));
  EXPECT_THAT(x.eos_token_ids, ElementsAre(2));
}

TEST(HfConfig, EverySharedFixtureParsesAndCopiesAreCurrent) {
  SKIP_IF_NO_SHARED();
  int n = 0;
  for (const auto& de : std::filesystem::directory_iterator(testing::SharedDir() +
                                                            "/reference/models")) {
    std::string cfg = de.path().string() + "/config.json";
    if (!FileExists(cfg)) continue;
    auto r = LoadModelConfig(cfg);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    ++n;
    std::string copy = testing::TestDataDir() + "/formats/" + de.path().filename().string() +
                       "/config.json";
    if (FileExists(copy)) {
      EXPECT_EQ(*ReadFileToString(copy), *ReadFileToString(cfg)) << copy;
    }
  }
  EXPECT_EQ(n, 13);  // every fixture but llama-tiny-gguf
  auto real = LoadModelConfig(testing::SharedDir() + "/reference/models/qwen3-realtok-tiny");
  ASSERT_TRUE(real.ok());
  EXPECT_EQ(real->vocab_size, 151936);
  EXPECT_EQ(real->max_position_embeddings, 40960);
  EXPECT_THAT(real->eos_token_ids, ElementsAre(151645));
}

TEST(HfConfig, QwenUseSlidingWindow) {
  const char* base = R"({"model_type": "qwen2", "hidden_size": 8, "num_hidden_layers": 3,
      "num_attention_heads": 2, "vocab_size": 10, "sliding_window": 4096,
      "max_window_layers": 1, "use_sliding_window": %s})";
  char buf[512];
  std::snprintf(buf, sizeof(buf), base, "false");
  auto off = ParseModelConfig(buf, "c.json");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->sliding_window.has_value());
  EXPECT_THAT(off->layer_types, ElementsAre("full_attention", "full_attention", "full_attention"));
  std::snprintf(buf, sizeof(buf), base, "true");
  auto on = ParseModelConfig(buf, "c.json");
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->sliding_window, 4096);
  EXPECT_THAT(on->layer_types,
              ElementsAre("full_attention", "sliding_attention", "sliding_attention"));
}

TEST(HfConfig, MultimodalTextConfigIsFlattened) {
  auto c = ParseModelConfig(R"({"architectures": ["Gemma3ForConditionalGeneration"],
      "model_type": "gemma3", "eos_token_id": [1, 106],
      "text_config": {"model_type": "gemma3_text", "hidden_size": 16, "num_hidden_layers": 1,
                      "num_attention_heads": 2, "head_dim": 8, "vocab_size": 20}})", "c.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model_type, "gemma3_text");
  EXPECT_EQ(c->hidden_size, 16);
  EXPECT_THAT(c->eos_token_ids, ElementsAre(1, 106));
  EXPECT_THAT(c->architectures, ElementsAre("Gemma3ForConditionalGeneration"));
}

TEST(HfConfig, Errors) {
  auto bad = ParseModelConfig("{nope", "c.json");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("c.json"));
  auto str = ParseModelConfig(R"({"hidden_size": "64"})", "c.json");
  EXPECT_THAT(str.status().message(), HasSubstr("'hidden_size' must be an integer, got \"64\""));
  auto missing = ParseModelConfig(
      R"({"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2})", "c.json");
  EXPECT_THAT(missing.status().message(), HasSubstr("'vocab_size' is missing"));
  const std::string ok_head = R"("hidden_size": 8, "num_hidden_layers": 2, "vocab_size": 10)";
  auto kv = ParseModelConfig("{" + ok_head + R"(, "num_attention_heads": 4, "num_key_value_heads": 3})", "c.json");
  EXPECT_THAT(kv.status().message(), HasSubstr("num_key_value_heads 3 does not divide"));
  auto lt = ParseModelConfig("{" + ok_head + R"(, "num_attention_heads": 2, "layer_types": ["full_attention"]})", "c.json");
  EXPECT_THAT(lt.status().message(), HasSubstr("layer_types has 1 entries"));
  auto eos = ParseModelConfig("{" + ok_head + R"(, "num_attention_heads": 2, "eos_token_id": ["x"]})", "c.json");
  EXPECT_THAT(eos.status().message(), HasSubstr("'eos_token_id' must be an integer or a list"));
  auto hd = ParseModelConfig(R"({"hidden_size": 10, "num_hidden_layers": 1, "vocab_size": 10, "num_attention_heads": 4})", "c.json");
  EXPECT_THAT(hd.status().message(), HasSubstr("no head_dim"));
  EXPECT_EQ(LoadModelConfig("/nonexistent/dir").status().code(), StatusCode::kNotFound);
}

TEST(HfConfig, NonMlxQuantizationConfig) {
  auto c = ParseModelConfig(R"({"hidden_size": 8, "num_hidden_layers": 1, "vocab_size": 10,
      "num_attention_heads": 2, "quantization_config": {"quant_method": "gptq", "bits": 4,
      "group_size": 128}})", "c.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->mlx_quantization.has_value());
  EXPECT_EQ(c->quant_method, "gptq");
}

}  // namespace
}  // namespace llmhost::hf_config_test
