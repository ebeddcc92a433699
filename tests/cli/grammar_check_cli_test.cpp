// `llmhost grammar-check` as a subprocess: the JSON-lines contract, each
// instance accepted exactly when the suite labels it valid (with the real
// Qwen3 vocabulary from ../shared), and bad input lines answered with the
// line's number and a nonzero exit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_process.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::grammar_check_cli_test {
namespace {

using Json = nlohmann::json;
using testing::ProcessResult;

const std::string kBinary = std::string(LLMHOST_BINARY_DIR) + "/llmhost";

std::string Describe(const ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out.substr(0, 2000) + "\nstderr: " + r.err;
}

std::vector<Json> JsonLines(const std::string& text) {
  std::vector<Json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(Json::parse(line, nullptr, false));
  return out;
}

// A small byte-level BPE vocabulary (900 tokens), given as a model directory.
std::string TinyModel() { return testing::TestDataDir() + "/models/qwen3-tiny"; }

class GrammarCheckCli : public ::testing::Test {
 protected:
  std::string Write(const std::string& content) {
    std::string path = JoinPath(dir_, "cases.jsonl");
    EXPECT_TRUE(WriteFileAtomic(path, content).ok());
    return path;
  }
  ProcessResult Run(const std::string& cases, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"grammar-check", "--tokenizer", TinyModel(), "--cases", Write(cases)};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunProcess(kBinary, args);
  }
  void TearDown() override { (void)!std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_ = testing::MakeTempDir();
};

TEST_F(GrammarCheckCli, OneLinePerCaseForEachKind) {
  ProcessResult r = Run(
      R"({"id": "re", "regex": "[a-c]+x?", "instances": [{"text": "abcab", "valid": true}, {"text": "abd"}, {"text": ""}]})"
      "\n\n"
      R"({"id": "gbnf", "grammar": "root ::= \"yes\" | \"no\"", "instances": [{"text": "no"}, {"text": "nope"}]})"
      "\n"
      R"({"id": "schema", "schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},)"
      R"( "instances": [{"text": "{\"n\": 12}"}, {"text": "{\"n\": 1.5}"}, {"text": "{}"}]})"
      "\n");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.err.find("vocabulary of"), std::string::npos) << r.err;
  std::vector<Json> lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  const std::vector<std::vector<bool>> want = {{true, false, false}, {true, false}, {true, false, false}};
  const char* ids[] = {"re", "gbnf", "schema"};
  for (size_t c = 0; c < lines.size(); ++c) {
    const Json& line = lines[c];
    EXPECT_EQ(line["id"], ids[c]);
    EXPECT_FALSE(line.contains("error")) << line;
    EXPECT_GE(line["compile_us"].get<double>(), 0.0);
    ASSERT_EQ(line["instances"].size(), want[c].size()) << line;
    for (size_t i = 0; i < want[c].size(); ++i) {
      const Json& inst = line["instances"][i];
      EXPECT_EQ(inst["accepted"].get<bool>(), want[c][i]) << ids[c] << " instance " << i;
      // An accepted text had every one of its tokens masked; a refused one
      // stops at the first token the mask refuses.
      size_t tokens = inst["tokens"], masks = inst["mask_us"].size();
      EXPECT_TRUE(want[c][i] ? masks == tokens : masks <= tokens) << inst;
    }
  }
  // The regex's first instance is the first text on a fresh grammar: its
  // first mask fills the cache.
  EXPECT_EQ(lines[0]["instances"][0]["cold_masks"][0], 0) << lines[0];
  EXPECT_EQ(lines[0]["instances"][2]["tokens"], 0);  // "" is not in [a-c]+x?
}

TEST_F(GrammarCheckCli, ACompileErrorIsReportedOnTheCaseLine) {
  ProcessResult r =
      Run(R"({"id": "u", "schema": {"type": "array", "uniqueItems": true}, "instances": [{"text": "[]"}]})"
          "\n"
          R"({"id": "bad-re", "regex": "(a", "instances": []})"
          "\n");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<Json> lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_NE(lines[0]["error"].get<std::string>().find("'uniqueItems' at / is not supported"), std::string::npos)
      << lines[0];
  EXPECT_TRUE(lines[0]["instances"].empty());
  EXPECT_TRUE(lines[1].contains("error")) << lines[1];
}

TEST_F(GrammarCheckCli, MaxWhitespaceBoundsRunsBetweenJsonTokens) {
  const std::string cases =
      R"({"id": "ws", "schema": {"type": "array"}, "instances": [{"text": "[1,  2]"}, {"text": "[1,\n        2]"}]})"
      "\n";
  ProcessResult bounded = Run(cases, {"--max-whitespace", "2"});
  ASSERT_EQ(bounded.exit_code, 0) << Describe(bounded);
  Json line = JsonLines(bounded.out).at(0);
  EXPECT_TRUE(line["instances"][0]["accepted"].get<bool>()) << line;
  EXPECT_FALSE(line["instances"][1]["accepted"].get<bool>()) << line;
  ProcessResult any = Run(cases, {"--max-whitespace", "-1"});
  ASSERT_EQ(any.exit_code, 0) << Describe(any);
  line = JsonLines(any.out).at(0);
  EXPECT_TRUE(line["instances"][1]["accepted"].get<bool>()) << line;
}

TEST_F(GrammarCheckCli, BadLinesNameTheLineAndFail) {
  const std::string good = R"({"id": "ok", "regex": "a", "instances": [{"text": "a"}]})";
  struct Bad {
    std::string line, message;
  };
  const std::vector<Bad> bad = {
      {"{\"id\": \"x\", ", "not valid JSON"},
      {"[1, 2]", "expected a JSON object"},
      {R"({"regex": "a"})", "\"id\" must be a string"},
      {R"({"id": "x", "regex": "a", "schema": {}})", "exactly one of"},
      {R"({"id": "x"})", "exactly one of"},
      {R"({"id": "x", "grammar": 12})", "\"grammar\" must be a string"},
      {R"({"id": "x", "regex": "a", "instances": {}})", "\"instances\" must be an array"},
      {R"({"id": "x", "regex": "a", "instances": [{"text": 1}]})", "instances[0]"},
  };
  for (const Bad& b : bad) {
    ProcessResult r = Run(good + "\n" + b.line + "\n" + good + "\n");
    EXPECT_EQ(r.exit_code, 1) << b.line << "\n" << Describe(r);
    EXPECT_NE(r.err.find("cases.jsonl:2: "), std::string::npos) << b.line << "\n" << r.err;
    EXPECT_NE(r.err.find(b.message), std::string::npos) << b.line << "\n" << r.err;
    EXPECT_EQ(JsonLines(r.out).size(), 1u) << "the line before is answered, none after: " << r.out;
  }
}

TEST_F(GrammarCheckCli, MissingInputsFail) {
  ProcessResult r =
      testing::RunProcess(kBinary, {"grammar-check", "--tokenizer", JoinPath(dir_, "none.json"), "--cases", Write("")});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("none.json"), std::string::npos) << r.err;
  r = testing::RunProcess(kBinary,
                          {"grammar-check", "--tokenizer", TinyModel(), "--cases", JoinPath(dir_, "no.jsonl")});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("no.jsonl"), std::string::npos) << r.err;
  // No --cases: stdin (here /dev/null) holds no cases.
  r = testing::RunProcess(kBinary, {"grammar-check", "--tokenizer", TinyModel()});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "");
}

// The whole case suite through the real Qwen3 vocabulary (152K tokens):
// every instance accepted exactly when it is labelled valid, every case that
// expects an error failing to compile with it.
TEST(GrammarCheckSuite, Qwen3AcceptsExactlyTheValidInstances) {
  SKIP_IF_NO_SHARED();
  const std::string tokenizer = testing::SharedDir() + "/reference/tokenizers/tok_qwen3.json";
  if (!FileExists(tokenizer)) GTEST_SKIP() << tokenizer << " is absent";
  const std::string suite = testing::TestDataDir() + "/grammar/cases.jsonl";
  // Whitespace runs bound generation, not validity: the suite's texts are pretty-printed.
  ProcessResult r = testing::RunProcess(
      kBinary, {"grammar-check", "--tokenizer", tokenizer, "--cases", suite, "--max-whitespace", "-1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<Json> got = JsonLines(r.out);
  std::ifstream in(suite);
  std::string text;
  size_t n = 0, instances = 0;
  while (std::getline(in, text)) {
    Json c = Json::parse(text);
    ASSERT_LT(n, got.size()) << "no output for " << c["id"];
    const Json& out = got[n++];
    ASSERT_EQ(out["id"], c["id"]);
    if (c.contains("error")) {
      ASSERT_TRUE(out.contains("error")) << c["id"] << " compiled but should fail with: " << c["error"];
      EXPECT_NE(out["error"].get<std::string>().find(c["error"].get<std::string>()), std::string::npos)
          << c["id"] << ": " << out["error"];
      continue;
    }
    ASSERT_FALSE(out.contains("error")) << c["id"] << ": " << out["error"];
    ASSERT_EQ(out["instances"].size(), c["instances"].size()) << c["id"];
    for (size_t i = 0; i < c["instances"].size(); ++i, ++instances) {
      const Json& inst = out["instances"][i];
      EXPECT_FALSE(inst.contains("error")) << c["id"] << ": " << inst["error"];
      EXPECT_EQ(inst["accepted"], c["instances"][i]["valid"]) << c["id"] << ": " << c["instances"][i]["text"];
    }
  }
  EXPECT_EQ(n, got.size());
  EXPECT_GT(n, 200u);
  EXPECT_GT(instances, 800u);
}

}  // namespace
}  // namespace llmhost::grammar_check_cli_test
