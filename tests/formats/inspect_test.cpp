// InspectModel (behind `llmhost inspect`): the JSON summary of model
// directories and GGUF files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/inspect.h"
#include "formats/safetensors_writer.h"
#include "test_util.h"

namespace llmhost::inspect_test {
namespace {

using ::testing::HasSubstr;

TEST(Inspect, SyntheticModelDirectory) {
  std::string dir = testing::MakeTempDir();
  std::string cfg = *ReadFileToString(testing::TestDataDir() + "/formats/qwen3moe-tiny/config.json");
  ASSERT_TRUE(WriteFileAtomic(dir + "/config.json", cfg).ok());
  std::string two(4, '\0');
  std::vector<SafetensorsWriteTensor> ts;
  for (const char* n : {"c", "a", "b"}) ts.push_back({n, DType::kBF16, {2}, two});
  ts.push_back({"d", DType::kF32, {1}, two});
  ASSERT_TRUE(WriteSafetensorsFile(dir + "/model.safetensors", ts, {}).ok());

  auto r = InspectModel(dir, InspectOptions{2, false});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& j = *r;
  EXPECT_EQ(j["format"], "safetensors");
  EXPECT_EQ(j["layout"], "single_file");
  EXPECT_EQ(j["architecture"], "Qwen3MoeForCausalLM");
  EXPECT_EQ(j["model_type"], "qwen3_moe");
  EXPECT_EQ(j["config"]["num_experts"], 8);
  EXPECT_EQ(j["config"]["head_dim"], 16);
  EXPECT_EQ(j["tensor_count"], 4);
  EXPECT_EQ(j["total_weight_bytes"], 16);
  EXPECT_EQ(j["dtypes"]["BF16"], 3);
  EXPECT_EQ(j["dtypes"]["F32"], 1);
  ASSERT_EQ(j["tensors"].size(), 2u);  // the first two by name
  EXPECT_EQ(j["tensors"][0]["name"], "a");
  EXPECT_EQ(j["tensors"][1]["name"], "b");
  EXPECT_EQ(j["tensors"][1]["shape"], nlohmann::ordered_json::array({2}));

  auto all = InspectModel(dir, InspectOptions{2, true});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)["tensors"].size(), 4u);
  EXPECT_EQ((*all)["tensors_listed"], 4);

  // A broken config.json is an error naming it.
  ASSERT_TRUE(WriteFileAtomic(dir + "/config.json", "{\"hidden_size\": \"x\"}").ok());
  auto bad = InspectModel(dir, {});
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("config.json"));
  std::filesystem::remove_all(dir);
}

TEST(Inspect, Errors) {
  EXPECT_EQ(InspectModel("/nonexistent/model", {}).status().code(), StatusCode::kNotFound);
  auto txt = InspectModel(testing::TestDataDir() + "/formats/llama3-tiny/config.json", {});
  EXPECT_EQ(txt.status().code(), StatusCode::kInvalidArgument);
  auto empty = InspectModel(testing::TestDataDir() + "/formats/llama3-tiny", {});
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);  // no weights in the copy
}

TEST(Inspect, GgufFile) {
  SKIP_IF_NO_SHARED();
  auto r = InspectModel(
      testing::SharedDir() + "/reference/models/llama-tiny-gguf/llama-tiny-q6_k.gguf", {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& j = *r;
  EXPECT_EQ(j["format"], "gguf");
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["file_type"], 18);
  EXPECT_EQ(j["config"]["block_count"], 2);
  EXPECT_EQ(j["config"]["embedding_length"], 256);
  EXPECT_EQ(j["config"]["vocab_size"], 907);
  EXPECT_EQ(j["tensor_count"], 21);
  EXPECT_EQ(j["dtypes"]["Q6_K"], 16);  // 7 matrices per layer x 2 + embedding + output
  EXPECT_EQ(j["dtypes"]["F32"], 5);    // 2 norms per layer + output_norm
  EXPECT_EQ(j["tensors"][0]["name"], "output.weight");
  EXPECT_EQ(j["metadata"]["tokenizer.ggml.pre"], "llama-bpe");
  EXPECT_EQ(j["metadata"]["llama.block_count"], 2);
  EXPECT_THAT(j["metadata"]["tokenizer.ggml.tokens"].get<std::string>(), HasSubstr("(907 string)"));
  // Q6_K: 210 bytes per 256 values. Embedding and output 907 rows each; per
  // layer q, o 256 rows; k, v 128; gate, up 512; down 256 rows of 512. Norms F32.
  const int64_t q6k = 210 * (2 * 907 + 2 * (2 * 256 + 2 * 128 + 2 * 512 + 2 * 256));
  EXPECT_EQ(j["total_weight_bytes"], q6k + 5 * 256 * 4);
}

TEST(Inspect, ShardedDirectory) {
  SKIP_IF_NO_SHARED();
  auto r = InspectModel(testing::SharedDir() + "/reference/models/llama3-tiny-sharded", {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["layout"], "sharded");
  EXPECT_EQ((*r)["files"], 5);
  EXPECT_EQ((*r)["tensor_count"], 21);
  EXPECT_EQ((*r)["total_weight_bytes"], 380288);
  EXPECT_EQ((*r)["tensors"][0]["name"], "lm_head.weight");
  EXPECT_EQ((*r)["tensors"][0]["file"], "model-00004-of-00005.safetensors");
  EXPECT_EQ((*r)["config"]["rope"]["theta"], 10000.0);
}

}  // namespace
}  // namespace llmhost::inspect_test
