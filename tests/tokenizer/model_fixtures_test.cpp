// The tokenizer.json of every model fixture in ../shared/reference/models must
// reproduce the input ids that transformers produced for its goldens: the
// prompts (chat template text, code, long English) encoded without special
// tokens, BERT sentences with [CLS]/[SEP], and XLM-R (query, document) pairs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost::model_fixtures_test {
namespace {

using nlohmann::json;

json LoadGolden(const std::string& fixture) {
  auto text = ReadFileToString(testing::SharedDir() + "/reference/golden/" + fixture + ".json");
  return text.ok() ? json::parse(*text) : json();
}

class FixtureTokenizer : public ::testing::TestWithParam<const char*> {};

TEST_P(FixtureTokenizer, PromptIdsMatchTransformers) {
  SKIP_IF_NO_SHARED();
  std::string fixture = GetParam();
  auto tok = Tokenizer::FromPath(testing::SharedDir() + "/reference/models/" + fixture);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  json golden = LoadGolden(fixture);
  ASSERT_TRUE(golden.is_object());
  int checked = 0;
  if (golden.contains("prompts")) {
    for (auto& [name, p] : golden["prompts"].items()) {
      auto want = p["input_ids"].get<std::vector<TokenId>>();
      std::vector<TokenId> got = (*tok)->Encode(p["text"].get<std::string>(), false);
      // "long" keeps the first 300 ids of a longer text.
      if (name == "long" && got.size() > want.size()) got.resize(want.size());
      EXPECT_EQ(json(got).dump(), json(want).dump()) << fixture << " prompt " << name;
      ++checked;
    }
  }
  if (golden.contains("sentences")) {
    for (const json& s : golden["sentences"]) {
      EXPECT_EQ(json((*tok)->Encode(s["text"].get<std::string>(), true)).dump(), s["input_ids"].dump())
          << fixture << " sentence " << s["text"];
      ++checked;
    }
  }
  if (golden.contains("pairs")) {
    std::string query = golden["query"];
    for (const json& p : golden["pairs"]) {
      EXPECT_EQ(json((*tok)->EncodePair(query, p["document"].get<std::string>(), true)).dump(),
                p["input_ids"].dump())
          << fixture << " pair with " << p["document"];
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(
    AllFixtures, FixtureTokenizer,
    ::testing::Values("llama3-tiny", "llama3-tiny-sharded", "llama3-tiny-mlx4", "mistral-tiny-swa",
                      "qwen2-tiny", "qwen3-tiny", "qwen3moe-tiny", "phi3-tiny", "gemma3-tiny",
                      "qwen3-tiny-mlx8", "qwen3-realtok-tiny", "bert-tiny-embed", "xlmr-tiny-rerank"),
    [](const ::testing::TestParamInfo<const char*>& info) {
      std::string n = info.param;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

}  // namespace
}  // namespace llmhost::model_fixtures_test
