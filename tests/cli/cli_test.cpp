// The `llmhost` binary's tokenizer commands, run as a subprocess: output
// against the Hugging Face goldens (tests/data/tokenizer, always present; the
// GGUF fixtures of ../shared when present) and the error contract (exit 1 and
// a message on stderr that names the problem).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_process.h"
#include "test_util.h"
#include "tokenizer/gguf_test_util.h"  // ScopedTempDir
#include "util/file.h"

namespace llmhost::cli_test {
namespace {

using Json = nlohmann::json;
using Ids = std::vector<int32_t>;
using testing::ProcessResult;

const std::string kBinary = std::string(LLMHOST_BINARY_DIR) + "/llmhost";

ProcessResult Llmhost(const std::vector<std::string>& args) { return testing::RunProcess(kBinary, args); }

std::string Describe(const ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// The JSON object printed on stdout (null when it is not one line of JSON).
Json StdoutJson(const ProcessResult& r) {
  if (r.out.empty() || r.out.back() != '\n' || r.out.find('\n') != r.out.size() - 1) return Json();
  return Json::parse(r.out, nullptr, false);
}

std::string DataTokenizer(const std::string& name) { return testing::TestDataDir() + "/tokenizer/" + name; }

Json Golden(const std::string& name) {
  auto text = ReadFileToString(DataTokenizer(name + ".json"));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? Json::parse(*text) : Json();
}

// Writes `content` to a file in a directory removed at exit; each call
// overwrites the previous file (tests run one subprocess at a time).
std::string WriteTemp(const std::string& content) {
  static testing::ScopedTempDir dir;
  std::string path = JoinPath(dir.path(), "text.txt");
  EXPECT_TRUE(WriteFileAtomic(path, content).ok());
  return path;
}

TEST(CliTest, HelpListsTheTokenizerCommands) {
  ProcessResult r = Llmhost({"--help"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("tokenize"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("detokenize"), std::string::npos) << r.out;
  ProcessResult sub = Llmhost({"tokenize", "--help"});
  EXPECT_EQ(sub.exit_code, 0) << Describe(sub);
  for (const char* opt : {"--tokenizer", "--text", "--text-file", "--add-special"})
    EXPECT_NE(sub.out.find(opt), std::string::npos) << opt << " missing from\n" << sub.out;
}

TEST(CliTest, NoSubcommandIsAUsageError) {
  ProcessResult r = Llmhost({});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_FALSE(r.err.empty() && r.out.empty());
}

// Every golden case through --text-file (exact bytes), with and without
// --add-special, then back through detokenize with and without --skip-special.
class CliGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(CliGolden, TokenizeAndDetokenizeMatchTheGolden) {
  Json golden = Golden(GetParam());
  const std::string tok = DataTokenizer(golden["tokenizer"].get<std::string>());
  int cases = 0;
  for (const Json& c : golden["cases"]) {
    ++cases;
    const std::string text = c["text"].get<std::string>();
    const std::string file = WriteTemp(text);
    ProcessResult plain = Llmhost({"tokenize", "--tokenizer", tok, "--text-file", file});
    ASSERT_EQ(plain.exit_code, 0) << Describe(plain);
    EXPECT_EQ(StdoutJson(plain), Json({{"ids", c["ids"]}})) << "text " << Json(text).dump();
    ProcessResult special = Llmhost({"tokenize", "--tokenizer", tok, "--text-file", file, "--add-special"});
    EXPECT_EQ(StdoutJson(special), Json({{"ids", c["ids_with_special"]}})) << "text " << Json(text).dump();

    std::string ids;
    for (const Json& id : c["ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
    if (ids.empty()) continue;
    ProcessResult dec = Llmhost({"detokenize", "--tokenizer", tok, "--ids", ids});
    ASSERT_EQ(dec.exit_code, 0) << Describe(dec);
    EXPECT_EQ(StdoutJson(dec), Json({{"text", c["decoded"]}})) << ids;
    ProcessResult skip = Llmhost({"detokenize", "--tokenizer", tok, "--ids", ids, "--skip-special"});
    EXPECT_EQ(StdoutJson(skip), Json({{"text", c["decoded_skip_special"]}})) << ids;
  }
  EXPECT_GT(cases, 50);
}

INSTANTIATE_TEST_SUITE_P(InRepo, CliGolden, ::testing::Values("wordpiece", "unigram"));

TEST(CliTest, TextOptionGivesTheSameIdsAsTheFile) {
  Json golden = Golden("wordpiece");
  const std::string tok = DataTokenizer("trained_wordpiece.json");
  int checked = 0;
  for (const Json& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    // argv cannot hold NUL, and a leading '-' would read as an option.
    if (text.empty() || text[0] == '-' || text.find('\0') != std::string::npos) continue;
    ProcessResult r = Llmhost({"tokenize", "--tokenizer", tok, "--text", text});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(StdoutJson(r), Json({{"ids", c["ids"]}})) << Json(text).dump();
    ++checked;
  }
  EXPECT_GT(checked, 40);
  // [CLS] ... [SEP] with --add-special, and ids separated by ", " are accepted.
  ProcessResult r = Llmhost({"tokenize", "--tokenizer", tok, "--text", "hello", "--add-special"});
  Json ids = StdoutJson(r)["ids"];
  ASSERT_TRUE(ids.is_array() && ids.size() >= 3) << Describe(r);
  ProcessResult d = Llmhost({"detokenize", "--tokenizer", tok, "--ids", " 2, 3 ", "--skip-special"});
  EXPECT_EQ(d.exit_code, 0) << Describe(d);
  EXPECT_EQ(StdoutJson(d), Json({{"text", ""}}));
}

TEST(CliTest, MissingTokenizerFileNamesThePath) {
  testing::ScopedTempDir tmp;
  const std::string missing = tmp.path() + "/no_such_tokenizer.json";
  ProcessResult r = Llmhost({"tokenize", "--tokenizer", missing, "--text", "hi"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  ProcessResult d = Llmhost({"detokenize", "--tokenizer", missing, "--ids", "1"});
  EXPECT_EQ(d.exit_code, 1) << Describe(d);
  EXPECT_NE(d.err.find(missing), std::string::npos) << d.err;
}

TEST(CliTest, MissingTextFileNamesThePath) {
  testing::ScopedTempDir tmp;
  const std::string missing = tmp.path() + "/no_such_text.txt";
  ProcessResult r =
      Llmhost({"tokenize", "--tokenizer", DataTokenizer("trained_wordpiece.json"), "--text-file", missing});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
}

TEST(CliTest, BadTokenizerFileIsAnError) {
  const std::string bad = WriteTemp("{\"model\": 42");
  ProcessResult r = Llmhost({"tokenize", "--tokenizer", bad, "--text", "hi"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
}

TEST(CliTest, BadIdsAreRejected) {
  const std::string tok = DataTokenizer("trained_wordpiece.json");
  for (const char* ids : {"1,x,3", "1.5", "-1", "1,,2x", "99999999999"}) {
    ProcessResult r = Llmhost({"detokenize", "--tokenizer", tok, "--ids", ids});
    EXPECT_EQ(r.exit_code, 1) << ids << "\n" << Describe(r);
    EXPECT_NE(r.err.find("--ids"), std::string::npos) << ids << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(CliTest, OutOfRangeIdIsRejected) {
  const std::string tok = DataTokenizer("trained_wordpiece.json");
  ProcessResult r = Llmhost({"detokenize", "--tokenizer", tok, "--ids", "5,1000000"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("1000000"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliTest, MissingArgumentsAreUsageErrors) {
  const std::string tok = DataTokenizer("trained_wordpiece.json");
  ProcessResult no_text = Llmhost({"tokenize", "--tokenizer", tok});
  EXPECT_NE(no_text.exit_code, 0) << Describe(no_text);
  EXPECT_FALSE(no_text.err.empty());
  ProcessResult no_tok = Llmhost({"tokenize", "--text", "hi"});
  EXPECT_NE(no_tok.exit_code, 0) << Describe(no_tok);
  ProcessResult no_ids = Llmhost({"detokenize", "--tokenizer", tok});
  EXPECT_NE(no_ids.exit_code, 0) << Describe(no_ids);
  ProcessResult both = Llmhost({"tokenize", "--tokenizer", tok, "--text", "a", "--text-file", WriteTemp("b")});
  EXPECT_NE(both.exit_code, 0) << Describe(both);
}

// GGUF vocabularies: a .gguf file, and a model directory holding only one.
TEST(CliTest, GgufFileAndDirectory) {
  SKIP_IF_NO_SHARED();
  const std::string ref = testing::SharedDir() + "/reference";
  const std::string gguf = ref + "/models/llama-tiny-gguf/llama-tiny-f32.gguf";
  auto golden_text = ReadFileToString(ref + "/golden/llama3-tiny.json");
  auto golden_ids = ReadFileToString(ref + "/golden/llama-tiny-f32.json");
  ASSERT_TRUE(golden_text.ok() && golden_ids.ok());
  const std::string raw = Json::parse(*golden_text)["prompts"]["raw"]["text"].get<std::string>();
  const Json want = Json::parse(*golden_ids)["prompts"]["raw"]["input_ids"];

  ProcessResult r = Llmhost({"tokenize", "--tokenizer", gguf, "--text-file", WriteTemp(raw)});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(StdoutJson(r), Json({{"ids", want}}));

  testing::ScopedTempDir tmp;
  const std::string& dir = tmp.path();
  ASSERT_EQ(::symlink(gguf.c_str(), (dir + "/model.gguf").c_str()), 0);
  ProcessResult d = Llmhost({"tokenize", "--tokenizer", dir, "--text-file", WriteTemp(raw)});
  ASSERT_EQ(d.exit_code, 0) << Describe(d);
  EXPECT_EQ(StdoutJson(d), Json({{"ids", want}}));

  std::string ids;
  for (const Json& id : want) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
  ProcessResult back = Llmhost({"detokenize", "--tokenizer", dir, "--ids", ids});
  ASSERT_EQ(back.exit_code, 0) << Describe(back);
  EXPECT_EQ(StdoutJson(back), Json({{"text", raw}}));

  // stories260K: SentencePiece with BOS added by --add-special.
  const std::string stories = testing::SharedDir() + "/models/stories260K/stories260K.gguf";
  ProcessResult s = Llmhost({"tokenize", "--tokenizer", stories, "--text", "Once upon a time", "--add-special"});
  ASSERT_EQ(s.exit_code, 0) << Describe(s);
  Json sids = StdoutJson(s)["ids"];
  ASSERT_TRUE(sids.is_array() && !sids.empty()) << Describe(s);
  EXPECT_EQ(sids[0], 1);
  std::string sid_list;
  for (const Json& id : sids) sid_list += (sid_list.empty() ? "" : ",") + std::to_string(id.get<int>());
  ProcessResult sback = Llmhost({"detokenize", "--tokenizer", stories, "--ids", sid_list, "--skip-special"});
  EXPECT_EQ(StdoutJson(sback), Json({{"text", "Once upon a time"}})) << Describe(sback);
}

TEST(CliTest, DirectoryWithoutTokenizerIsAnError) {
  testing::ScopedTempDir tmp;
  const std::string& dir = tmp.path();
  ProcessResult r = Llmhost({"tokenize", "--tokenizer", dir, "--text", "hi"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find(dir), std::string::npos) << r.err;
}

}  // namespace
}  // namespace llmhost::cli_test
