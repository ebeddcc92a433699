// Exact agreement with Hugging Face tokenizers 0.23.2 on the reference goldens:
// for every case, encode without/with special tokens and decode with/without
// skip_special must match byte for byte. Runs on ../shared (all five) and on
// the WordPiece/Unigram copies in tests/data/tokenizer (always present).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost::golden_test {
namespace {

std::string Quote(const std::string& s) { return nlohmann::json(s).dump(); }

std::string IdsToString(const std::vector<TokenId>& ids) { return nlohmann::json(ids).dump(); }

struct GoldenCounts {
  int cases = 0;
  int failures = 0;
};

// Checks every case of golden file `dir/name.json` (its tokenizer file is
// looked up in `tok_dir`, default `dir`); returns counts.
GoldenCounts CheckGolden(const std::string& dir, const std::string& name,
                         std::string tok_dir = "") {
  if (tok_dir.empty()) tok_dir = dir;
  GoldenCounts counts;
  auto text = ReadFileToString(JoinPath(dir, name + ".json"));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return counts;
  nlohmann::json golden = nlohmann::json::parse(*text);
  std::string tok_path = JoinPath(tok_dir, golden["tokenizer"].get<std::string>());
  auto tok = Tokenizer::FromPath(tok_path);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (!tok.ok()) return counts;
  for (const auto& c : golden["cases"]) {
    ++counts.cases;
    std::string input = c["text"].get<std::string>();
    auto want_ids = c["ids"].get<std::vector<TokenId>>();
    auto want_special = c["ids_with_special"].get<std::vector<TokenId>>();
    std::string want_dec = c["decoded"].get<std::string>();
    std::string want_skip = c["decoded_skip_special"].get<std::string>();
    std::vector<TokenId> ids = (*tok)->Encode(input, false);
    std::vector<TokenId> with_special = (*tok)->Encode(input, true);
    std::string dec = (*tok)->Decode(want_ids, false);
    std::string skip = (*tok)->Decode(want_ids, true);
    bool ok = ids == want_ids && with_special == want_special && dec == want_dec && skip == want_skip;
    if (!ok) ++counts.failures;
    EXPECT_EQ(IdsToString(ids), IdsToString(want_ids)) << name << " ids for " << Quote(input);
    EXPECT_EQ(IdsToString(with_special), IdsToString(want_special))
        << name << " ids_with_special for " << Quote(input);
    EXPECT_EQ(Quote(dec), Quote(want_dec)) << name << " decoded for " << Quote(input);
    EXPECT_EQ(Quote(skip), Quote(want_skip)) << name << " decoded_skip_special for " << Quote(input);
  }
  std::printf("[golden] %s: %d/%d cases pass\n", name.c_str(), counts.cases - counts.failures,
              counts.cases);
  return counts;
}

class SharedGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(SharedGolden, MatchesHuggingFace) {
  SKIP_IF_NO_SHARED();
  GoldenCounts c = CheckGolden(testing::SharedDir() + "/reference/tokenizers", GetParam());
  EXPECT_GT(c.cases, 50);
  EXPECT_EQ(c.failures, 0);
}

INSTANTIATE_TEST_SUITE_P(AllFive, SharedGolden,
                         ::testing::Values("llama3", "qwen3", "llama2", "wordpiece", "unigram"));

class LocalGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(LocalGolden, MatchesHuggingFace) {
  GoldenCounts c = CheckGolden(testing::TestDataDir() + "/tokenizer", GetParam());
  EXPECT_GT(c.cases, 50);
  EXPECT_EQ(c.failures, 0);
}

INSTANTIATE_TEST_SUITE_P(InRepo, LocalGolden,
                         ::testing::Values("wordpiece", "unigram", "random_wordpiece",
                                           "random_unigram"));

// Random texts (make_random_goldens.js) for the real tokenizers, which stay in
// ../shared: the goldens live in the repo, the tokenizer files do not.
class RandomSharedGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(RandomSharedGolden, MatchesHuggingFace) {
  SKIP_IF_NO_SHARED();
  GoldenCounts c = CheckGolden(testing::TestDataDir() + "/tokenizer", GetParam(),
                               testing::SharedDir() + "/reference/tokenizers");
  EXPECT_GE(c.cases, 25);
  EXPECT_EQ(c.failures, 0);
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, RandomSharedGolden,
                         ::testing::Values("random_llama3", "random_qwen3", "random_llama2",
                                           "random_llama2_long"));

}  // namespace
}  // namespace llmhost::golden_test
