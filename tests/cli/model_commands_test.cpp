// `llmhost score` and `llmhost generate` as subprocesses: score's logits file
// against the transformers goldens, generate's streamed text against the
// golden greedy tokens, and the error contract (exit 1, message on stderr).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "cli/run_process.h"
#include "formats/safetensors.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost::model_commands_test {
namespace {

using Json = nlohmann::json;
const std::string kBinary = std::string(LLMHOST_BINARY_DIR) + "/llmhost";

testing::ProcessResult Llmhost(const std::vector<std::string>& args) {
  return testing::RunProcess(kBinary, args);
}

std::string ModelsRoot() {
  const std::string shared = testing::SharedDir();
  return shared.empty() ? testing::TestDataDir() + "/models" : shared + "/reference/models";
}
std::string GoldenRoot() {
  const std::string shared = testing::SharedDir();
  return shared.empty() ? testing::TestDataDir() + "/models/golden" : shared + "/reference/golden";
}

std::string Join(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

TEST(ScoreCommandTest, WritesEveryPositionsLogits) {
  auto text = ReadFileToString(GoldenRoot() + "/qwen2-tiny.json");
  ASSERT_TRUE(text.ok());
  const Json g = Json::parse(*text);
  const std::vector<int64_t> ids = g["prompts"]["raw"]["input_ids"];
  const std::string out = testing::MakeTempDir() + "/logits.safetensors";
  auto r = Llmhost({"score", "--model", ModelsRoot() + "/qwen2-tiny", "--ids", Join(ids), "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto got = SafetensorsFile::Open(out);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  auto ref = SafetensorsFile::Open(GoldenRoot() + "/qwen2-tiny.safetensors");
  ASSERT_TRUE(ref.ok());
  auto gl = (*got)->Tensor("logits");
  auto rl = (*ref)->Tensor("raw.logits");
  ASSERT_TRUE(gl.ok() && rl.ok());
  EXPECT_EQ(gl->dtype, DType::kF32);
  ASSERT_EQ(gl->shape, (std::vector<int64_t>{static_cast<int64_t>(ids.size()), 1024}));
  std::vector<float> a(gl->NumElements()), b(rl->NumElements());
  std::memcpy(a.data(), gl->data, gl->n_bytes);
  std::memcpy(b.data(), rl->data, rl->n_bytes);
  for (size_t row = 0; row < ids.size(); ++row) {
    double num = 0, den = 0;
    for (size_t c = 0; c < 1024; ++c) {
      num += std::pow(a[row * 1024 + c] - b[row * 1024 + c], 2);
      den += std::pow(b[row * 1024 + c], 2);
    }
    EXPECT_LE(std::sqrt(num / den), 1e-4) << "row " << row;
  }
}

TEST(ScoreCommandTest, DeviceFlagErrorsSayWhatToFix) {
  const std::string model = ModelsRoot() + "/qwen2-tiny";
  const std::string out = testing::MakeTempDir() + "/x.safetensors";
  auto bad = Llmhost({"score", "--model", model, "--ids", "1,2", "--out", out, "--device", "gpu"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("expected auto, cpu, cuda or cuda:N"), std::string::npos) << bad.err;
  // No machine has a ninth GPU here: a clear refusal, never a crash.
  auto missing = Llmhost({"generate", "--model", model, "--ids", "1,2", "--max-tokens", "2", "--device", "cuda:8"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("cuda"), std::string::npos) << missing.err;
  EXPECT_FALSE(FileExists(out));
}

TEST(InspectCommandTest, SaysWhatTheGpuKeepsOfEachGgufType) {
  auto r = Llmhost({"inspect", testing::TestDataDir() + "/models/llama-tiny-gguf/llama-tiny-q4_0.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_TRUE(j.contains("cuda")) << r.out;
  EXPECT_EQ(j["cuda"]["kept_as_stored"], Json::array({"F32", "Q4_0"}));
  EXPECT_EQ(j["cuda"]["expanded_to_f32"], Json::array());
}

TEST(ScoreCommandTest, Errors) {
  const std::string model = ModelsRoot() + "/qwen2-tiny";
  const std::string out = testing::MakeTempDir() + "/x.safetensors";
  auto r = Llmhost({"score", "--model", model, "--ids", "1,x", "--out", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("'x'"), std::string::npos) << r.err;
  r = Llmhost({"score", "--model", model, "--ids", "1", "--out", out, "--precision", "f8"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--precision"), std::string::npos) << r.err;
  r = Llmhost({"score", "--model", model, "--ids", "5000", "--out", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("5000"), std::string::npos) << r.err;
  r = Llmhost({"score", "--model", model + "-absent", "--ids", "1", "--out", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("absent"), std::string::npos) << r.err;
  EXPECT_FALSE(FileExists(out));
}

// --ids with the golden prompt: the streamed text is the decode of the
// golden greedy continuation (special tokens shown).
TEST(GenerateCommandTest, StreamsTheGreedyContinuation) {
  auto text = ReadFileToString(GoldenRoot() + "/llama3-tiny.json");
  ASSERT_TRUE(text.ok());
  const Json p = Json::parse(*text)["prompts"]["raw"];
  const std::vector<int64_t> ids = p["input_ids"];
  const std::vector<int32_t> greedy = p["greedy_tokens"];
  const std::string model = ModelsRoot() + "/llama3-tiny";
  auto r = Llmhost({"generate", "--model", model, "--ids", Join(ids), "--max-tokens",
                    std::to_string(greedy.size()), "--show-special", "--precision", "f32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto tok = Tokenizer::FromPath(model);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(r.out, (*tok)->Decode(greedy, /*skip_special=*/false));
  // Fewer tokens: a prefix.
  r = Llmhost({"generate", "--model", model, "--ids", Join(ids), "--max-tokens", "3", "--show-special"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, (*tok)->Decode(std::vector<int32_t>(greedy.begin(), greedy.begin() + 3), false));
}

// stories260K through the command line: greedy from BOS prints llama2.c's
// text exactly. expected.json's text is its 200 positions' 200 generated
// tokens (it re-encodes to 200 ids), so the command asks for 200.
TEST(GenerateCommandTest, Stories260KPrintsLlama2cText) {
  SKIP_IF_NO_SHARED();
  const std::string dir = testing::SharedDir() + "/models/stories260K";
  auto text = ReadFileToString(dir + "/expected.json");
  ASSERT_TRUE(text.ok());
  const Json expected = Json::parse(*text);
  auto r = Llmhost({"generate", "--model", dir + "/stories260K.gguf", "--ids", "1", "--max-tokens",
                    std::to_string(expected["positions"].get<int64_t>()), "--temperature", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto strip = [](const std::string& s) {
    const size_t b = s.find_first_not_of(" \n"), e = s.find_last_not_of(" \n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  EXPECT_EQ(strip(r.out), strip(expected["expected_text"].get<std::string>()));
}

TEST(GenerateCommandTest, SamplingIsSeededAndPromptModesWork) {
  const std::string model = ModelsRoot() + "/qwen3-tiny";
  auto a = Llmhost({"generate", "--model", model, "--prompt", "def add(a, b):", "--max-tokens", "12",
                    "--temperature", "1.5", "--seed", "7"});
  auto b = Llmhost({"generate", "--model", model, "--prompt", "def add(a, b):", "--max-tokens", "12",
                    "--temperature", "1.5", "--seed", "7"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_FALSE(a.out.empty());
  auto c = Llmhost({"generate", "--model", model, "--chat", "What is 2+2?", "--max-tokens", "4"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  auto e = Llmhost({"generate", "--model", model, "--prompt", "x", "--ids", "1"});
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("exactly one"), std::string::npos) << e.err;
}

}  // namespace
}  // namespace llmhost::model_commands_test
