// Loading paths, error reporting, accessors, invalid UTF-8, thread safety and
// linear-time behaviour of the tokenizer.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"
#include "util/utf8.h"

namespace llmhost::tokenizer_test {
namespace {

using nlohmann::json;

std::string DataPath(const std::string& name) { return testing::TestDataDir() + "/tokenizer/" + name; }

json ReadJson(const std::string& path) {
  auto text = ReadFileToString(path);
  return text.ok() ? json::parse(*text) : json();
}

std::unique_ptr<Tokenizer> LoadOrDie(const std::string& path) {
  auto t = Tokenizer::FromPath(path);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

TEST(TokenizerLoad, FromModelDirectoryUsesItsTokenizerJson) {
  std::string dir = testing::MakeTempDir();
  auto text = ReadFileToString(DataPath("trained_wordpiece.json"));
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(WriteFileAtomic(JoinPath(dir, "tokenizer.json"), *text).ok());
  auto tok = Tokenizer::FromPath(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // From wordpiece.json: "Hello world" -> [CLS] hello world [SEP].
  json golden = ReadJson(DataPath("wordpiece.json"));
  for (const json& c : golden["cases"]) {
    if (c["text"] != "Hello world") continue;
    EXPECT_EQ(json((*tok)->Encode("Hello world", true)).dump(), c["ids_with_special"].dump());
  }
}

TEST(TokenizerLoad, MissingPathsAreNotFound) {
  auto missing = Tokenizer::FromPath("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/tokenizer.json"), std::string::npos);

  std::string empty_dir = testing::MakeTempDir();
  auto none = Tokenizer::FromPath(empty_dir);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
}

TEST(TokenizerLoad, GgufPathsGoToTheGgufLoader) {
  std::string dir = testing::MakeTempDir();
  std::string gguf = JoinPath(dir, "model.gguf");
  ASSERT_TRUE(WriteFileAtomic(gguf, "not really a gguf").ok());
  // Either the GGUF loader's "not supported yet" or its parse error; never a
  // tokenizer.json error, and the path is named.
  for (const std::string& p : {gguf, dir}) {
    auto t = Tokenizer::FromPath(p);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message().find("JSON"), std::string::npos) << t.status().ToString();
    EXPECT_NE(t.status().message().find("model.gguf"), std::string::npos) << t.status().ToString();
  }
}

// Loads `doc` and expects an error of `code` whose message contains `needle`.
void ExpectLoadError(const json& doc, StatusCode code, const std::string& needle) {
  auto t = Tokenizer::FromJson(doc);
  ASSERT_FALSE(t.ok()) << doc.dump();
  EXPECT_EQ(t.status().code(), code) << t.status().ToString();
  EXPECT_NE(t.status().message().find(needle), std::string::npos) << t.status().ToString();
}

TEST(TokenizerLoad, BadFilesGiveErrorsNamingTheField) {
  json wl = {{"type", "WordLevel"}, {"vocab", {{"a", 0}}}, {"unk_token", "a"}};
  ExpectLoadError(json::array(), StatusCode::kInvalidArgument, "JSON object");
  ExpectLoadError(json::object(), StatusCode::kInvalidArgument, "model");
  ExpectLoadError({{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", {"a b"}}}}},
                  StatusCode::kInvalidArgument, "model.merges[0]");
  ExpectLoadError({{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", {"a"}}}}},
                  StatusCode::kInvalidArgument, "model.merges[0]");
  ExpectLoadError({{"model", {{"type", "BPE"}, {"vocab", {{"a", "x"}}}}}}, StatusCode::kInvalidArgument,
                  "model.vocab");
  ExpectLoadError({{"model", {{"type", "BPE"}, {"vocab", {{"a", 100000000}}}}}},
                  StatusCode::kInvalidArgument, "out of range");
  ExpectLoadError({{"model", {{"type", "Unigram"},
                              {"vocab", json::array({json::array({"a", -1.0})})},
                              {"unk_id", 5}}}},
                  StatusCode::kInvalidArgument, "unk_id");
  ExpectLoadError({{"model", {{"type", "Mystery"}}}}, StatusCode::kNotSupported, "Mystery");
  ExpectLoadError({{"model", wl}, {"normalizer", {{"type", "Fancy"}}}}, StatusCode::kNotSupported,
                  "normalizer");
  ExpectLoadError({{"model", wl},
                   {"pre_tokenizer",
                    {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}}}},
                  StatusCode::kInvalidArgument, "(unclosed");
  ExpectLoadError({{"model", wl},
                   {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}}}},
                  StatusCode::kInvalidArgument, "behavior");
  ExpectLoadError({{"model", wl}, {"added_tokens", {{{"content", "x"}}}}}, StatusCode::kInvalidArgument,
                  "added_tokens[0]");
  ExpectLoadError({{"model", wl},
                   {"post_processor", {{"type", "TemplateProcessing"}, {"single", {"[CLS]", "$A"}}}}},
                  StatusCode::kInvalidArgument, "[CLS]");
  // Deeply nested sequences are refused, not recursed into without bound.
  json deep = {{"type", "Lowercase"}};
  for (int i = 0; i < 100; ++i) deep = {{"type", "Sequence"}, {"normalizers", {deep}}};
  ExpectLoadError({{"model", wl}, {"normalizer", deep}}, StatusCode::kInvalidArgument, "too deep");
}

TEST(TokenizerLoad, NotJsonIsAnError) {
  std::string dir = testing::MakeTempDir();
  std::string path = JoinPath(dir, "tokenizer.json");
  ASSERT_TRUE(WriteFileAtomic(path, "{\"model\": ").ok());
  auto t = Tokenizer::FromPath(path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find(path), std::string::npos);
}

TEST(TokenizerAccessors, AddedTokensAndSpecialIds) {
  auto tok = LoadOrDie(DataPath("trained_wordpiece.json"));
  ASSERT_NE(tok, nullptr);
  json file = ReadJson(DataPath("trained_wordpiece.json"));
  EXPECT_EQ(tok->VocabSize(), file["model"]["vocab"].size());
  EXPECT_EQ(tok->TokenToId("[CLS]"), std::optional<TokenId>(2));
  EXPECT_EQ(tok->IdToToken(3), std::optional<std::string>("[SEP]"));
  EXPECT_TRUE(tok->IsSpecial(2));
  EXPECT_FALSE(tok->IsSpecial(file["model"]["vocab"]["the"].get<TokenId>()));
  EXPECT_EQ(tok->IdToToken(-1), std::nullopt);
  EXPECT_EQ(tok->IdToToken(1 << 30), std::nullopt);
  EXPECT_EQ(tok->TokenToId("no-such-token"), std::nullopt);
  EXPECT_EQ(tok->SpecialPrefixIds(), std::vector<TokenId>{2});
  EXPECT_EQ(tok->SpecialSuffixIds(), std::vector<TokenId>{3});
  std::vector<AddedTokenInfo> added = tok->AddedTokens();
  ASSERT_EQ(added.size(), file["added_tokens"].size());
  EXPECT_EQ(added[0].content, "[PAD]");
  EXPECT_TRUE(added[0].special);
}

TEST(TokenizerDecode, UnknownIdsAreSkipped) {
  auto tok = LoadOrDie(DataPath("trained_wordpiece.json"));
  ASSERT_NE(tok, nullptr);
  std::vector<TokenId> ids = tok->Encode("hello world", false);
  std::vector<TokenId> noisy = {-5};
  noisy.insert(noisy.end(), ids.begin(), ids.end());
  noisy.push_back(1 << 29);
  EXPECT_EQ(tok->Decode(noisy, false), tok->Decode(ids, false));
}

// Invalid UTF-8 (which HF cannot receive) is repaired byte by byte to U+FFFD
// and then encoded like that text.
TEST(TokenizerEncode, InvalidUtf8BecomesReplacementCharacters) {
  auto tok = LoadOrDie(DataPath("trained_unigram.json"));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("ab\xFF" "cd\xC3", false),
            tok->Encode("ab\xEF\xBF\xBD" "cd\xEF\xBF\xBD", false));
  EXPECT_EQ(tok->Encode("\xED\xA0\x80", false),  // a UTF-8 encoded surrogate: 3 bad bytes
            tok->Encode("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", false));
}

TEST(TokenizerEncode, ConcurrentEncodesAgree) {
  std::vector<std::unique_ptr<Tokenizer>> toks;
  toks.push_back(LoadOrDie(DataPath("trained_unigram.json")));
  toks.push_back(LoadOrDie(DataPath("trained_wordpiece.json")));
  if (!testing::SharedDir().empty())
    toks.push_back(LoadOrDie(testing::SharedDir() + "/reference/models/llama3-tiny/tokenizer.json"));
  json golden = ReadJson(DataPath("random_unigram.json"));
  std::vector<std::string> texts;
  for (const json& c : golden["cases"]) texts.push_back(c["text"]);
  for (const auto& tok : toks) {
    ASSERT_NE(tok, nullptr);
    std::vector<std::vector<TokenId>> want;
    for (const std::string& t : texts) want.push_back(tok->Encode(t, true));
    std::vector<std::thread> threads;
    std::vector<int> mismatches(4, 0);
    for (int th = 0; th < 4; ++th) {
      threads.emplace_back([&, th] {
        for (int round = 0; round < 5; ++round)
          for (size_t i = 0; i < texts.size(); ++i)
            if (tok->Encode(texts[(i + th * 37) % texts.size()], true) != want[(i + th * 37) % texts.size()])
              ++mismatches[th];
      });
    }
    for (auto& t : threads) t.join();
    for (int m : mismatches) EXPECT_EQ(m, 0);
  }
}

// Pathological inputs (one huge pre-token, long whitespace runs, random
// bytes) of 1 MiB must encode (no crash, no recursion or regex-stack limit)
// and, where the text is valid UTF-8 and the tokenizer is lossless, decode
// back to the input. Linear time is shown by bench/tokenizer_bench (ratio of
// time per MB at 1 and 8 MB), not by a timed test.
void ExpectEncodes(const Tokenizer& tok, const std::string& name, const std::string& unit, bool lossless) {
  std::string big;
  while (big.size() < (1u << 20)) big += unit;
  std::vector<TokenId> ids = tok.Encode(big, false);
  // Whitespace alone may encode to nothing (WordPiece drops it); anything else may not.
  if (unit.find_first_not_of(" \n") != std::string::npos) {
    EXPECT_FALSE(ids.empty()) << name;
  }
  if (lossless && utf8::IsValid(big)) {
    EXPECT_TRUE(tok.Decode(ids, false) == big) << name << ": decode(encode(x)) != x";
  }
}

void CheckPathologicalInputs(const Tokenizer& tok, bool lossless) {
  std::mt19937 rng(7);
  std::string random_bytes(4096, '\0');
  for (char& c : random_bytes) c = static_cast<char>(rng());
  ExpectEncodes(tok, "one letter", "a", lossless);
  ExpectEncodes(tok, "spaces", " ", lossless);
  ExpectEncodes(tok, "newlines", "\n", lossless);
  ExpectEncodes(tok, "digits", "7", lossless);
  ExpectEncodes(tok, "punctuation", "!", lossless);
  ExpectEncodes(tok, "space runs", "                x", lossless);
  ExpectEncodes(tok, "random bytes", random_bytes, lossless);
  ExpectEncodes(tok, "cjk", "\xE6\x97\xA5\xE6\x9C\xAC", lossless);
}

TEST(TokenizerPathological, HugeInputsInRepo) {
  for (const char* name : {"trained_unigram.json", "trained_wordpiece.json"}) {
    auto tok = LoadOrDie(DataPath(name));
    ASSERT_NE(tok, nullptr);
    SCOPED_TRACE(name);
    CheckPathologicalInputs(*tok, /*lossless=*/false);  // normalizers lowercase / strip
  }
}

TEST(TokenizerPathological, HugeInputsRealTokenizers) {
  SKIP_IF_NO_SHARED();
  for (const char* name : {"tok_llama3.json", "tok_llama2.json"}) {
    auto tok = LoadOrDie(testing::SharedDir() + "/reference/tokenizers/" + name);
    ASSERT_NE(tok, nullptr);
    SCOPED_TRACE(name);
    CheckPathologicalInputs(*tok, /*lossless=*/true);
  }
}

}  // namespace
}  // namespace llmhost::tokenizer_test

namespace llmhost::tokenizer_test {
namespace {

// A group repetition over a long piece needs deep backtracking state: the
// match must still cover the whole text (no silent truncation at a JIT stack
// limit).
TEST(TokenizerRegex, LongGroupRepetitionMatchesWholePiece) {
  json doc = {{"model", {{"type", "WordLevel"}, {"vocab", {{"[UNK]", 0}, {"x", 1}}}, {"unk_token", "[UNK]"}}},
              {"pre_tokenizer",
               {{"type", "Split"}, {"pattern", {{"Regex", "(?:ab|cd)+"}}}, {"behavior", "Isolated"}}}};
  auto tok = Tokenizer::FromJson(doc);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  std::string text;
  while (text.size() < (1u << 20)) text += "abcd";
  text += "x";
  // One unknown piece for the run, then "x".
  EXPECT_EQ((*tok)->Encode(text, false), (std::vector<TokenId>{0, 1}));
}

}  // namespace
}  // namespace llmhost::tokenizer_test
