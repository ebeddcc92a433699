// `llmhost synth-model` as a subprocess: a model it writes is usable by the
// other sub-commands (generate --chat through its template, tokenize), the
// config comes inline or from @FILE, and bad options exit 1 with a message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/run_process.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost {
namespace {

using ::testing::HasSubstr;

const std::string kBinary = std::string(LLMHOST_BINARY_DIR) + "/llmhost";
const char kConfig[] =
    R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 512})";

testing::ProcessResult Llmhost(const std::vector<std::string>& args) {
  return testing::RunProcess(kBinary, args);
}

TEST(SynthCommandTest, WritesAModelTheOtherCommandsUse) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/shape.json", kConfig).ok());
  const std::string out = dir + "/m";
  auto r = Llmhost({"synth-model", "--arch", "qwen3", "--config", "@" + dir + "/shape.json", "--dtype",
                    "mlx8", "--group-size", "32", "--seed", "3", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("wrote " + out));
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                        "generation_config.json"}) {
    EXPECT_TRUE(FileExists(out + "/" + f)) << f;
  }
  auto g = Llmhost({"generate", "--model", out, "--chat", "Hello there", "--max-tokens", "5",
                    "--show-special"});
  EXPECT_EQ(g.exit_code, 0) << g.err;
  EXPECT_FALSE(g.out.empty());
  auto t = Llmhost({"tokenize", "--tokenizer", out, "--text", "<|im_start|>"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_THAT(t.out, HasSubstr("510"));  // <|im_start|>: the second-last id

  // Inline JSON, same seed: the same weights.
  const std::string out2 = dir + "/m2";
  auto r2 = Llmhost({"synth-model", "--arch", "qwen3", "--config", kConfig, "--dtype", "mlx8",
                     "--group-size", "32", "--seed", "3", "--out", out2});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  auto a = ReadFileToString(out + "/model.safetensors");
  auto b = ReadFileToString(out2 + "/model.safetensors");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(*a == *b);
  std::filesystem::remove_all(dir);
}

TEST(SynthCommandTest, BadOptionsExitOneWithAMessage) {
  const std::string dir = testing::MakeTempDir();
  const std::string out = dir + "/m";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--arch", "gpt9", "--config", kConfig, "--dtype", "bf16"}, "unknown architecture 'gpt9'"},
      {{"--arch", "llama", "--config", kConfig, "--dtype", "fp4"}, "--dtype: 'fp4'"},
      {{"--arch", "llama", "--config", "{not json", "--dtype", "bf16"}, "--config: not valid JSON"},
      {{"--arch", "llama", "--config", "@" + dir + "/none.json", "--dtype", "bf16"}, "none.json"},
      {{"--arch", "llama", "--config", R"({"hidden_size": 64})", "--dtype", "bf16"},
       "'num_hidden_layers' is missing"},
      {{"--arch", "llama", "--config", kConfig, "--dtype", "mlx4", "--group-size", "128"},
       "hidden_size 64 is not a multiple of the MLX group size 128"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"synth-model"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.insert(args.end(), {"--out", out});
    auto r = Llmhost(args);
    EXPECT_EQ(r.exit_code, 1) << c.message << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  EXPECT_FALSE(FileExists(out));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llmhost
