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

namespace llmhost::synth_cli_test {
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

// The random-weights spec of the same options is the same model: the same
// greedy text through its chat template and the same logits, with no files.
TEST(SynthCommandTest, ARandomWeightsSpecIsTheWrittenModel) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/shape.json", kConfig).ok());
  const std::string out = dir + "/m";
  auto w = Llmhost({"synth-model", "--arch", "qwen3", "--config", "@" + dir + "/shape.json", "--dtype", "mlx8",
                    "--group-size", "32", "--seed", "3", "--out", out});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const std::string spec = "random:qwen3:mlx8-g32:" + dir + "/shape.json:3";
  std::vector<std::string> texts;
  for (const std::string& model : {out, spec}) {
    auto g = Llmhost({"generate", "--model", model, "--chat", "Hello there", "--max-tokens", "6", "--show-special"});
    EXPECT_EQ(g.exit_code, 0) << g.err;
    texts.push_back(g.out);
    auto s = Llmhost({"score", "--model", model, "--ids", "1,2,300,511", "--out", dir + "/" +
                      std::to_string(texts.size()) + ".safetensors"});
    EXPECT_EQ(s.exit_code, 0) << s.err;
  }
  EXPECT_FALSE(texts[0].empty());
  EXPECT_EQ(texts[0], texts[1]);
  auto a = ReadFileToString(dir + "/1.safetensors");
  auto b = ReadFileToString(dir + "/2.safetensors");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(*a == *b);
  auto bad = Llmhost({"generate", "--model", "random:qwen3:fp4:" + dir + "/shape.json", "--prompt", "x"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("DTYPE 'fp4'"));
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
       "hidden_size 64 is not a multiple of the group size 128"},
      {{"--arch", "llama", "--dtype", "bf16"}, "--config is required"},
      {{"--arch", "scripted"}, "--arch scripted needs --script FILE"},
      {{"--arch", "scripted", "--script", dir + "/bad.json"}, "replies[0].text: expected a string"},
      {{"--arch", "scripted", "--script", dir + "/bad.json", "--dtype", "bf16"}, "takes no --config or --dtype"},
      {{"--arch", "llama", "--config", kConfig, "--dtype", "bf16", "--script", dir + "/bad.json"},
       "--script is for --arch scripted"},
  };
  ASSERT_TRUE(WriteFileAtomic(dir + "/bad.json", R"({"replies": [{"when": "x"}]})").ok());
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

TEST(SynthCommandTest, ScriptedModelDirectory) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/script.json", R"({"replies": [{"text": "hi"}]})").ok());
  auto r = Llmhost({"synth-model", "--arch", "scripted", "--script", dir + "/script.json", "--out", dir + "/m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja", "script.json"}) {
    EXPECT_TRUE(FileExists(dir + "/m/" + f)) << f;
  }
  auto config = ReadFileToString(dir + "/m/config.json");
  ASSERT_TRUE(config.ok());
  EXPECT_THAT(*config, HasSubstr("\"llmhost_scripted\""));
  // The template's markers choose the Hermes format with reasoning.
  ASSERT_TRUE(WriteFileAtomic(dir + "/out.txt",
                              "<think>\nplan\n</think>\n\nok\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>")
                  .ok());
  auto parsed = Llmhost({"parse-output", "--model", dir + "/m", "--text-file", dir + "/out.txt"});
  ASSERT_EQ(parsed.exit_code, 0) << parsed.err;
  auto j = nlohmann::json::parse(parsed.out);
  EXPECT_EQ(j["reasoning_content"], "plan");
  EXPECT_EQ(j["content"], "ok");
  ASSERT_EQ(j["tool_calls"].size(), 1u);
  EXPECT_EQ(j["tool_calls"][0]["name"], "f");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llmhost::synth_cli_test
