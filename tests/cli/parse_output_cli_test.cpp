// `llmhost parse-output` as a subprocess: the one-line JSON contract, the
// format chosen from a model's chat template, --stream-chunks giving the
// same result, and bad input answered with a message and a nonzero exit.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_process.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::parse_output_cli_test {
namespace {

using Json = nlohmann::json;
using testing::ProcessResult;

const std::string kBinary = std::string(LLMHOST_BINARY_DIR) + "/llmhost";

ProcessResult Llmhost(const std::vector<std::string>& args) { return testing::RunProcess(kBinary, args); }

std::string Describe(const ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

Json OneJsonLine(const ProcessResult& r) {
  if (r.out.empty() || r.out.back() != '\n' || r.out.find('\n') != r.out.size() - 1) return Json();
  return Json::parse(r.out, nullptr, false);
}

class ParseOutputCli : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& content) {
    std::string path = JoinPath(dir_, name);
    EXPECT_TRUE(WriteFileAtomic(path, content).ok());
    return path;
  }
  // A model directory holding only a real chat template (and config.json).
  std::string ModelWithTemplateOf(const std::string& golden_name) {
    auto golden = ReadFileToString(testing::TestDataDir() + "/chat/templates/" + golden_name + ".json");
    EXPECT_TRUE(golden.ok());
    std::string model = JoinPath(dir_, golden_name);
    EXPECT_EQ(::mkdir(model.c_str(), 0700), 0);
    EXPECT_TRUE(WriteFileAtomic(JoinPath(model, "chat_template.jinja"),
                                Json::parse(*golden).at("template").get<std::string>())
                    .ok());
    EXPECT_TRUE(WriteFileAtomic(JoinPath(model, "config.json"), "{\"model_type\": \"qwen3\"}").ok());
    return model;
  }
  void TearDown() override { (void)!std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_ = testing::MakeTempDir();
};

const char* kHermesOutput =
    "<think>\nNeed the weather.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

TEST_F(ParseOutputCli, PrintsContentReasoningAndCallsAsOneJsonLine) {
  std::string text = Write("out.txt", kHermesOutput);
  ProcessResult r = Llmhost({"parse-output", "--format", "hermes", "--text-file", text});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Json want = {{"content", "Checking."},
               {"reasoning_content", "Need the weather."},
               {"tool_calls",
                {{{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}},
                 {{"name", "get_time"}, {"arguments", "{}"}}}}};
  EXPECT_EQ(OneJsonLine(r), want) << r.out;
  for (const char* n : {"1", "2", "5", "64"}) {
    ProcessResult s = Llmhost({"parse-output", "--format", "hermes", "--text-file", text, "--stream-chunks", n});
    ASSERT_EQ(s.exit_code, 0) << Describe(s);
    EXPECT_EQ(s.out, r.out) << "--stream-chunks " << n;
  }
}

TEST_F(ParseOutputCli, ToolsTypeXmlValues) {
  std::string text = Write("out.txt",
                           "<tool_call>\n<function=set_volume>\n<parameter=level>\n7\n</parameter>\n<parameter=note>\n"
                           "7\n</parameter>\n</function>\n</tool_call>");
  std::string tools = Write("tools.json", R"([{"type": "function", "function": {"name": "set_volume",
      "parameters": {"type": "object", "properties": {"level": {"type": "integer"}, "note": {"type": "string"}}}}}])");
  ProcessResult r =
      Llmhost({"parse-output", "--format", "qwen3_coder", "--text-file", text, "--tools", tools, "--stream-chunks", "3"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Json got = OneJsonLine(r);
  ASSERT_TRUE(got.is_object()) << r.out;
  ASSERT_EQ(got["tool_calls"].size(), 1u);
  EXPECT_EQ(got["tool_calls"][0]["arguments"], "{\"level\": 7, \"note\": \"7\"}");
}

TEST_F(ParseOutputCli, ModelTemplateChoosesTheFormat) {
  std::string qwq = ModelWithTemplateOf("Qwen-QwQ-32B");
  std::string text = Write("out.txt", "Short sum.\n</think>\n\n4");
  ProcessResult r = Llmhost({"parse-output", "--model", qwq, "--text-file", text, "--starts-in-reasoning"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(OneJsonLine(r), (Json{{"content", "4"}, {"reasoning_content", "Short sum."}, {"tool_calls", Json::array()}}));

  std::string kimi = ModelWithTemplateOf("moonshotai-Kimi-K2");
  text = Write("kimi.txt",
               "<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>"
               "{\"q\": \"x\"}<|tool_call_end|><|tool_calls_section_end|>");
  r = Llmhost({"parse-output", "--model", kimi, "--text-file", text, "--stream-chunks", "1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(OneJsonLine(r), (Json{{"content", ""},
                                  {"reasoning_content", ""},
                                  {"tool_calls", {{{"name", "search"}, {"arguments", "{\"q\": \"x\"}"}}}}}));
}

TEST_F(ParseOutputCli, MalformedMarkupComesBackAsContent) {
  const std::string raw = "<tool_call>\n{\"name\": \"f\", \"arguments\": {";
  std::string text = Write("out.txt", raw);
  ProcessResult r = Llmhost({"parse-output", "--format", "hermes", "--text-file", text, "--stream-chunks", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(OneJsonLine(r)["content"], raw);
}

TEST_F(ParseOutputCli, BadInputIsAMessageAndANonzeroExit) {
  std::string text = Write("out.txt", "hello");
  struct BadCase {
    std::vector<std::string> args;
    const char* message;
  };
  std::string bad_tools = Write("bad_tools.json", "[{\"type\": ");
  std::string object_tools = Write("object_tools.json", "{\"name\": \"f\"}");
  const std::vector<BadCase> cases = {
      {{"parse-output", "--format", "qwen", "--text-file", text}, "unknown output format 'qwen'"},
      {{"parse-output", "--format", "hermes", "--text-file", JoinPath(dir_, "missing.txt")}, "missing.txt"},
      {{"parse-output", "--format", "hermes", "--text-file", text, "--tools", bad_tools}, "bad_tools.json"},
      {{"parse-output", "--format", "hermes", "--text-file", text, "--tools", object_tools}, "array of tools"},
      {{"parse-output", "--text-file", text}, "exactly one of --model"},
      {{"parse-output", "--model", JoinPath(dir_, "nope"), "--text-file", text}, "nope"},
      {{"parse-output", "--format", "hermes", "--text-file", text, "--stream-chunks", "0"}, "stream-chunks"},
  };
  for (const BadCase& c : cases) {
    ProcessResult r = Llmhost(c.args);
    EXPECT_NE(r.exit_code, 0) << c.message << "\n" << Describe(r);
    EXPECT_GT(r.exit_code, 0) << "crashed? " << Describe(r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << Describe(r);
    EXPECT_TRUE(r.out.empty()) << Describe(r);
  }
}

TEST_F(ParseOutputCli, InvalidUtf8OutputDoesNotCrash) {
  std::string text = Write("out.txt", "caf\xC3 \xFF<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"\xFE\"}}\n</tool_call>");
  ProcessResult r = Llmhost({"parse-output", "--format", "hermes", "--text-file", text});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(OneJsonLine(r).is_object()) << r.out;
}

}  // namespace
}  // namespace llmhost::parse_output_cli_test
