// The XML-style formats whose values are typed by the tool's schema
// (Qwen3-Coder, GLM-4.5), every case also split at every byte boundary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/output_parser.h"
#include "chat/output_parse_check.h"

namespace llmhost::output_parser_xml_formats_test {
namespace {

using testing::CheckOutput;

ParseOptions WithTools(bool starts_in_reasoning = false) {
  ParseOptions o;
  o.starts_in_reasoning = starts_in_reasoning;
  o.tools = nlohmann::json::parse(R"([
    {"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
      "path": {"type": "string"}, "content": {"type": "string"}, "overwrite": {"type": "boolean"},
      "mode": {"type": "integer"}, "ratio": {"type": "number"}, "options": {"type": "object"},
      "tags": {"type": "array", "items": {"type": "string"}}, "limit": {"type": ["integer", "null"]}}}}},
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}}}}}
  ])");
  return o;
}

TEST(Qwen3CoderFormat, TypedParametersAfterText) {
  CheckOutput(OutputFormat::kQwen3Coder, WithTools(),
              "I'll write the file.\n<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n"
              "<parameter=content>\ndef f():\n    return \"x\"\n\n</parameter>\n<parameter=overwrite>\ntrue\n</parameter>\n"
              "<parameter=mode>\n420\n</parameter>\n</function>\n</tool_call>",
              {"I'll write the file.",
               "",
               {{"write_file",
                 R"({"path": "src/a.py", "content": "def f():\n    return \"x\"\n", "overwrite": true, "mode": 420})"}}});
}

TEST(Qwen3CoderFormat, ObjectArrayNumberAndUntypedValues) {
  CheckOutput(OutputFormat::kQwen3Coder, WithTools(),
              "<tool_call>\n<function=write_file>\n<parameter=options>\n{\"a\": [1, 2]}\n</parameter>\n"
              "<parameter=tags>\n[\"x\", \"y\"]\n</parameter>\n<parameter=ratio>\n0.5\n</parameter>\n"
              "<parameter=limit>\nnull\n</parameter>\n<parameter=extra>\n123\n</parameter>\n"
              "<parameter=mode>\nnot a number\n</parameter>\n</function>\n</tool_call>",
              {"",
               "",
               {{"write_file",
                 R"({"options": {"a":[1,2]}, "tags": ["x","y"], "ratio": 0.5, "limit": null, "extra": "123", "mode": "not a number"})"}}});
}

TEST(Qwen3CoderFormat, SeveralCallsAndNoParameters) {
  CheckOutput(OutputFormat::kQwen3Coder, WithTools(),
              "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n"
              "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=list_files>\n</function>\n</tool_call>",
              {"", "", {{"get_weather", R"({"city": "Paris", "days": 2})"}, {"list_files", "{}"}}});
}

TEST(Qwen3CoderFormat, ValueWithMarkupLookalikes) {
  CheckOutput(OutputFormat::kQwen3Coder, WithTools(),
              "<tool_call>\n<function=write_file>\n<parameter=content>\n<p>a</p>\n</param\n</parameter>\n</function>\n"
              "</tool_call>",
              {"", "", {{"write_file", R"({"content": "<p>a</p>\n</param"})"}}});
}

TEST(Qwen3CoderFormat, UnterminatedCallIsContent) {
  const std::string text = "Writing.\n<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/a.py";
  CheckOutput(OutputFormat::kQwen3Coder, WithTools(), text, {text, "", {}}, /*well_formed=*/false);
}

TEST(Qwen3CoderFormat, NotAFunctionIsContent) {
  const std::string text = "<tool_call>\n{\"name\": \"f\"}\n</tool_call>";
  CheckOutput(OutputFormat::kQwen3Coder, WithTools(), text + " ok", {text + " ok", "", {}}, /*well_formed=*/false);
}

TEST(Glm45Format, NameAndTypedPairs) {
  CheckOutput(OutputFormat::kGlm45, WithTools(),
              "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n<arg_key>days</arg_key>\n"
              "<arg_value>2</arg_value>\n</tool_call>",
              {"", "", {{"get_weather", R"({"city": "Beijing", "days": 2})"}}});
}

TEST(Glm45Format, Glm47ReasoningTextAndCallsWithoutNewlines) {
  CheckOutput(OutputFormat::kGlm45, WithTools(/*starts_in_reasoning=*/true),
              "The user wants a file.</think>Writing it now.<tool_call>write_file<arg_key>path</arg_key>"
              "<arg_value>a.txt</arg_value><arg_key>tags</arg_key><arg_value>[\"a\", \"b\"]</arg_value>"
              "<arg_key>overwrite</arg_key><arg_value>false</arg_value></tool_call>"
              "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Oslo</arg_value></tool_call>",
              {"Writing it now.",
               "The user wants a file.",
               {{"write_file", R"({"path": "a.txt", "tags": ["a","b"], "overwrite": false})"},
                {"get_weather", R"({"city": "Oslo"})"}}});
}

TEST(Glm45Format, UnterminatedValueIsContent) {
  const std::string text = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Bei";
  CheckOutput(OutputFormat::kGlm45, WithTools(), text, {text, "", {}}, /*well_formed=*/false);
}

TEST(Qwen3CoderFormat, StringValuesStreamAsGenerated) {
  OutputParser p(OutputFormat::kQwen3Coder, WithTools());
  p.Feed("<tool_call>\n<function=write_file>\n<parameter=content>\nline one\n");
  auto events = p.Feed("line two\n</param");
  std::string args;
  for (const OutputEvent& e : events) {
    if (e.kind == OutputEvent::Kind::kToolCallArguments) args += e.text;
  }
  EXPECT_EQ(args, "\\nline two");  // the last newline may be the markup's: held
  p.Feed("eter>\n</function>\n</tool_call>");
  p.Finish();
  ASSERT_EQ(p.Result().tool_calls.size(), 1u);
  EXPECT_EQ(p.Result().tool_calls[0].arguments, R"({"content": "line one\nline two"})");
}

}  // namespace
}  // namespace llmhost::output_parser_xml_formats_test
