// stories260K (a real trained tiny Llama in GGUF with its own SentencePiece
// vocabulary): greedy decoding from BOS reproduces llama2.c's text exactly.
// The model may not be copied into the project: the test runs where
// ../shared is present and skips otherwise.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "model/generate.h"
#include "model/model.h"
#include "test_util.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace llmhost::stories_test {
namespace {

std::string Strip(const std::string& s) {
  const size_t b = s.find_first_not_of(" \n");
  const size_t e = s.find_last_not_of(" \n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

void CheckStories(Precision precision) {
  SKIP_IF_NO_SHARED();
  const std::string dir = testing::SharedDir() + "/models/stories260K";
  auto expected_text = ReadFileToString(dir + "/expected.json");
  ASSERT_TRUE(expected_text.ok());
  const nlohmann::json expected = nlohmann::json::parse(*expected_text);
  const std::string gguf = dir + "/stories260K.gguf";
  CpuBackend backend(&ThreadPool::Default(), precision);
  auto model = Model::Load(gguf, &backend);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto tok = Tokenizer::FromPath(gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // llama2.c: `positions` forward passes from BOS, each producing one token,
  // stopping early at BOS (its sequence delimiter).
  GenerateOptions opts;
  opts.max_tokens = expected["positions"].get<int64_t>();
  opts.stop_ids = {1};
  StreamDecoder stream(**tok, /*skip_special=*/true);
  std::string streamed;
  const std::vector<int32_t> bos = {1};
  auto ids = Generate(**model, bos, opts, [&](int32_t id) {
    streamed += stream.Add(id);
    return true;
  });
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  streamed += stream.Finish();
  const std::string want = Strip(expected["expected_text"].get<std::string>());
  EXPECT_EQ(Strip(streamed), want);
  EXPECT_EQ(Strip((*tok)->Decode(*ids, true)), want);
}

TEST(Stories260KTest, GreedyFromBosReference) { CheckStories(Precision::kReference); }
TEST(Stories260KTest, GreedyFromBosFast) { CheckStories(Precision::kFast); }

}  // namespace
}  // namespace llmhost::stories_test
