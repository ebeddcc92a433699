// Pythonic calls, gpt-oss Harmony channels and the plain (reasoning only)
// format, every case also split at every byte boundary.
#include <gtest/gtest.h>

#include "chat/output_parser.h"
#include "chat/output_parse_check.h"

namespace llmhost::output_parser_other_formats_test {
namespace {

using testing::CheckOutput;

TEST(PythonicFormat, ListOfCallsWithPythonLiterals) {
  CheckOutput(OutputFormat::kPythonic, ParseOptions{},
              "[get_weather(city=\"Paris\", days=3), get_time(tz='UTC', verbose=True, tags=[\"a\", None], "
              "opts={'k': 1.5, 'n': -2}, pair=(1, 2))]",
              {"",
               "",
               {{"get_weather", R"({"city":"Paris","days":3})"},
                {"get_time", R"({"tz":"UTC","verbose":true,"tags":["a",null],"opts":{"k":1.5,"n":-2},"pair":[1,2]})"}}});
}

TEST(PythonicFormat, NoArgumentsAndEscapes) {
  CheckOutput(OutputFormat::kPythonic, ParseOptions{}, "[list_files(), echo(text='it\\'s \\u00e9\\n')]",
              {"", "", {{"list_files", "{}"}, {"echo", "{\"text\":\"it's \xC3\xA9\\n\"}"}}});
}

TEST(PythonicFormat, WrappedCallAfterText) {
  CheckOutput(OutputFormat::kPythonic, ParseOptions{},
              "Let me search.\n<|tool_call_start|>[search(query=\"llm hosting\")]<|tool_call_end|>",
              {"Let me search.", "", {{"search", R"({"query":"llm hosting"})"}}});
}

TEST(PythonicFormat, BracketedTextIsContent) {
  CheckOutput(OutputFormat::kPythonic, ParseOptions{}, "[1] is a citation, [a] too.", {"[1] is a citation, [a] too.", "", {}},
              /*well_formed=*/false);
  CheckOutput(OutputFormat::kPythonic, ParseOptions{}, "[f(x=)] is not a call", {"[f(x=)] is not a call", "", {}},
              /*well_formed=*/false);
}

TEST(HarmonyFormat, AnalysisThenToolCall) {
  CheckOutput(OutputFormat::kHarmony, ParseOptions{},
              "<|channel|>analysis<|message|>User wants the weather. Call get_weather.<|end|><|start|>assistant"
              "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
              {"", "User wants the weather. Call get_weather.", {{"get_weather", R"({"city": "Paris"})"}}});
}

TEST(HarmonyFormat, AnalysisThenFinal) {
  CheckOutput(OutputFormat::kHarmony, ParseOptions{},
              "<|channel|>analysis<|message|>Simple greeting.<|end|><|start|>assistant<|channel|>final<|message|>"
              "Hello there! <|> is not a marker.<|return|>",
              {"Hello there! <|> is not a marker.", "Simple greeting.", {}});
}

TEST(HarmonyFormat, RecipientAfterTheRoleAndCallStopTokenStripped) {
  CheckOutput(OutputFormat::kHarmony, ParseOptions{},
              "<|channel|>commentary<|message|>Checking the time.<|end|><|start|>assistant to=functions.get_time"
              "<|channel|>commentary json<|message|>{\"tz\": \"UTC\"}",
              {"Checking the time.", "", {{"get_time", R"({"tz": "UTC"})"}}});
}

TEST(HarmonyFormat, FinalWithoutReturnAndBadArguments) {
  CheckOutput(OutputFormat::kHarmony, ParseOptions{}, "<|channel|>final<|message|>Hi", {"Hi", "", {}});
  const std::string bad = "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{nope}<|call|>";
  CheckOutput(OutputFormat::kHarmony, ParseOptions{}, bad, {bad, "", {}}, /*well_formed=*/false);
}

TEST(NoneFormat, ReasoningOnlyAndMarkupStaysText) {
  CheckOutput(OutputFormat::kNone, ParseOptions{}, "<think>plan</think>\nAnswer.", {"Answer.", "plan", {}});
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  CheckOutput(OutputFormat::kNone, ParseOptions{}, text, {text, "", {}});
}

TEST(NoneFormat, ReasoningOff) {
  ParseOptions o;
  o.reasoning = false;
  CheckOutput(OutputFormat::kNone, o, "<think>plan</think>Answer.", {"<think>plan</think>Answer.", "", {}});
}

TEST(OutputParser, EmptyOutputAndWhitespace) {
  CheckOutput(OutputFormat::kHermes, ParseOptions{}, "", {"", "", {}});
  CheckOutput(OutputFormat::kHermes, ParseOptions{}, "  \n", {"", "", {}});
  CheckOutput(OutputFormat::kHermes, ParseOptions{}, "a  \n b ", {"a  \n b ", "", {}});
}

}  // namespace
}  // namespace llmhost::output_parser_other_formats_test
