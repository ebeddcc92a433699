// The JSON tool-call formats (Hermes/Qwen, Llama 3, Mistral, DeepSeek,
// Kimi-K2) on outputs written as each family writes them; every case is also
// fed split at every byte boundary and in small pieces (CheckOutput).
#include <gtest/gtest.h>

#include "chat/output_parser.h"
#include "chat/output_parse_check.h"

namespace llmhost::output_parser_json_formats_test {
namespace {

using testing::CheckOutput;
using testing::ExpectedOutput;

ParseOptions Options(bool starts_in_reasoning = false) {
  ParseOptions o;
  o.starts_in_reasoning = starts_in_reasoning;
  return o;
}

TEST(HermesFormat, TextBeforeACall) {
  CheckOutput(OutputFormat::kHermes, Options(),
              "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
              {"Let me check.", "", {{"get_weather", R"({"city": "Paris"})"}}});
}

TEST(HermesFormat, SeveralCallsInOneTurn) {
  CheckOutput(OutputFormat::kHermes, Options(),
              "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
              "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>",
              {"", "", {{"get_weather", R"({"city": "Paris"})"}, {"get_time", R"({"tz": "CET"})"}}});
}

TEST(HermesFormat, Qwen3ReasoningThenACall) {
  CheckOutput(OutputFormat::kHermes, Options(),
              "<think>\nThe user wants the weather in Paris.\n</think>\n\n<tool_call>\n"
              "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
              {"", "The user wants the weather in Paris.", {{"get_weather", R"({"city": "Paris", "days": 3})"}}});
}

TEST(HermesFormat, ReasoningThenAnswer) {
  CheckOutput(OutputFormat::kHermes, Options(), "<think>\n2 + 2 is 4.\n</think>\n\nThe answer is 4.",
              {"The answer is 4.", "2 + 2 is 4.", {}});
}

TEST(HermesFormat, GenerationPromptOpenedTheThinkBlock) {
  CheckOutput(OutputFormat::kHermes, Options(/*starts_in_reasoning=*/true),
              "Okay, simple arithmetic.\n</think>\n\nThe answer is 4.", {"The answer is 4.", "Okay, simple arithmetic.", {}});
}

TEST(HermesFormat, TextAfterTheCallsAndMarkupLookalikes) {
  CheckOutput(OutputFormat::kHermes, Options(),
              "Use <b>bold</b> and a < b.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\nCalled <tool_ it.",
              {"Use <b>bold</b> and a < b.Called <tool_ it.", "", {{"f", "{}"}}});
}

TEST(HermesFormat, ThinkTagInsideTheAnswerIsText) {
  CheckOutput(OutputFormat::kHermes, Options(), "Wrap it in <think> tags.", {"Wrap it in <think> tags.", "", {}});
}

TEST(HermesFormat, ArgumentsBeforeTheName) {
  CheckOutput(OutputFormat::kHermes, Options(),
              "<tool_call>\n{\"arguments\": {\"q\": \"llm\"}, \"name\": \"search\"}\n</tool_call>",
              {"", "", {{"search", R"({"q": "llm"})"}}});
}

TEST(HermesFormat, UnterminatedCallIsContent) {
  const std::string text = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": ";
  CheckOutput(OutputFormat::kHermes, Options(), text, {text, "", {}}, /*well_formed=*/false);
}

TEST(HermesFormat, InvalidJsonIsContentAndLaterCallsStillParse) {
  const std::string bad = "<tool_call>\n{\"name\": get_weather}\n</tool_call>";
  CheckOutput(OutputFormat::kHermes, Options(),
              bad + "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
              {bad, "", {{"get_time", "{}"}}}, /*well_formed=*/false);
}

TEST(HermesFormat, UnterminatedThinkIsReasoning) {
  CheckOutput(OutputFormat::kHermes, Options(), "<think>\nStill thinking about", {"", "Still thinking about", {}});
}

TEST(Llama3JsonFormat, BareJsonCall) {
  CheckOutput(OutputFormat::kLlama3Json, Options(),
              "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}",
              {"", "", {{"get_weather", R"({"city": "Paris", "unit": "celsius"})"}}});
}

TEST(Llama3JsonFormat, PythonTagAndEom) {
  CheckOutput(OutputFormat::kLlama3Json, Options(),
              "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eom_id|>",
              {"", "", {{"get_weather", R"({"city": "Paris"})"}}});
}

TEST(Llama3JsonFormat, SeveralCallsJoinedBySemicolons) {
  CheckOutput(OutputFormat::kLlama3Json, Options(),
              "{\"type\": \"function\", \"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 1}}",
              {"", "", {{"a", "{}"}, {"b", R"({"x": 1})"}}});
}

TEST(Llama3JsonFormat, PlainTextAndJsonAnswersAreContent) {
  CheckOutput(OutputFormat::kLlama3Json, Options(), "The weather is nice {today}.",
              {"The weather is nice {today}.", "", {}});
  CheckOutput(OutputFormat::kLlama3Json, Options(), "{\"answer\": 42}", {"{\"answer\": 42}", "", {}},
              /*well_formed=*/false);
}

TEST(Llama3JsonFormat, JsonAnswerStreamsAsTextFromItsFirstKey) {
  OutputParser p(OutputFormat::kLlama3Json, ParseOptions{});
  p.Feed("{\"answer\": ");
  auto events = p.Feed("4");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, OutputEvent::Kind::kContent);
  EXPECT_EQ(p.Result().content, "{\"answer\": 4");
  CheckOutput(OutputFormat::kLlama3Json, Options(), "{\"answer\": {\"name\": \"x\"}}",
              {"{\"answer\": {\"name\": \"x\"}}", "", {}});
}

TEST(Llama3JsonFormat, TextAfterTheObjectMeansNoCall) {
  const std::string text = "{\"name\": \"f\", \"parameters\": {}} is how you would call it.";
  CheckOutput(OutputFormat::kLlama3Json, Options(), text, {text, "", {}}, /*well_formed=*/false);
}

TEST(MistralFormat, JsonArrayOfCalls) {
  CheckOutput(OutputFormat::kMistral, Options(),
              "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
              "{\"name\": \"get_time\", \"arguments\": {}}]",
              {"", "", {{"get_weather", R"({"city": "Paris"})"}, {"get_time", "{}"}}});
}

TEST(MistralFormat, NameArgsCalls) {
  CheckOutput(OutputFormat::kMistral, Options(),
              "Checking both.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{}",
              {"Checking both.", "", {{"get_weather", R"({"city": "Paris"})"}, {"get_time", "{}"}}});
}

TEST(MistralFormat, CallIdAndThinking) {
  CheckOutput(OutputFormat::kMistral, Options(),
              "[THINK]Need the weather.[/THINK][TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Paris\"}",
              {"", "Need the weather.", {{"get_weather", R"({"city": "Paris"})"}}});
}

TEST(MistralFormat, BrokenArrayIsContent) {
  const std::string text = "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {]";
  CheckOutput(OutputFormat::kMistral, Options(), text, {text, "", {}}, /*well_formed=*/false);
}

const std::string kDsBegin = "<｜tool▁calls▁begin｜>", kDsEnd = "<｜tool▁calls▁end｜>";
const std::string kDsCall = "<｜tool▁call▁begin｜>", kDsCallEnd = "<｜tool▁call▁end｜>", kDsSep = "<｜tool▁sep｜>";

TEST(DeepSeekV3Format, R1ReasoningAndTwoCalls) {
  CheckOutput(OutputFormat::kDeepSeekV3, Options(),
              "<think>\nThe weather and time are needed.\n</think>\n\n" + kDsBegin + kDsCall + "function" + kDsSep +
                  "get_weather\n```json\n{\"city\": \"Paris\"}\n```" + kDsCallEnd + "\n" + kDsCall + "function" + kDsSep +
                  "get_time\n```json\n{}\n```" + kDsCallEnd + kDsEnd,
              {"", "The weather and time are needed.", {{"get_weather", R"({"city": "Paris"})"}, {"get_time", "{}"}}});
}

TEST(DeepSeekV3Format, StartsInReasoningWithTextBeforeTheCall) {
  CheckOutput(OutputFormat::kDeepSeekV3, Options(true),
              "Paris weather.\n</think>\n\nLet me look.\n" + kDsBegin + kDsCall + "function" + kDsSep +
                  "get_weather\n```json\n{\"city\": \"Paris\"}\n```" + kDsCallEnd + kDsEnd,
              {"Let me look.", "Paris weather.", {{"get_weather", R"({"city": "Paris"})"}}});
}

TEST(DeepSeekV3Format, UnterminatedSectionIsContent) {
  const std::string text = kDsBegin + kDsCall + "function" + kDsSep + "get_weather\n```json\n{\"city\": \"Paris\"}\n```" +
                           kDsCallEnd;
  CheckOutput(OutputFormat::kDeepSeekV3, Options(), text, {text, "", {}}, /*well_formed=*/false);
}

TEST(DeepSeekV31Format, NameSepArguments) {
  CheckOutput(OutputFormat::kDeepSeekV31, Options(),
              "Checking." + kDsBegin + kDsCall + "get_weather" + kDsSep + "{\"city\": \"Paris\"}" + kDsCallEnd + kDsCall +
                  "get_time" + kDsSep + "{\"tz\": \"UTC\"}" + kDsCallEnd + kDsEnd,
              {"Checking.", "", {{"get_weather", R"({"city": "Paris"})"}, {"get_time", R"({"tz": "UTC"})"}}});
}

TEST(DeepSeekV31Format, ThinkingThenAnswer) {
  CheckOutput(OutputFormat::kDeepSeekV31, Options(true), "Easy one.</think>It is 4.", {"It is 4.", "Easy one.", {}});
}

TEST(KimiK2Format, CallsWithTheirOwnIds) {
  const std::string text =
      "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
      "{\"city\": \"Paris\"}<|tool_call_end|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}"
      "<|tool_call_end|><|tool_calls_section_end|>";
  CheckOutput(OutputFormat::kKimiK2, Options(), "I'll check. " + text,
              {"I'll check.", "", {{"get_weather", R"({"city": "Paris"})"}, {"get_time", "{}"}}});
  ParsedOutput p = ParseOutput(OutputFormat::kKimiK2, Options(), text);
  ASSERT_EQ(p.tool_calls.size(), 2u);
  EXPECT_EQ(p.tool_calls[0].id, "functions.get_weather:0");
  EXPECT_EQ(p.tool_calls[1].id, "functions.get_time:1");
}

TEST(KimiK2Format, BadArgumentsAreContent) {
  const std::string text =
      "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{oops}"
      "<|tool_call_end|><|tool_calls_section_end|>";
  CheckOutput(OutputFormat::kKimiK2, Options(), text, {text, "", {}}, /*well_formed=*/false);
}

TEST(OutputParser, IdsAreNumberedInOrder) {
  ParseOptions o;
  o.call_id_prefix = "call_x";
  ParsedOutput p = ParseOutput(OutputFormat::kMistral, o, "[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[ARGS]{}");
  ASSERT_EQ(p.tool_calls.size(), 2u);
  EXPECT_EQ(p.tool_calls[0].id, "call_x0");
  EXPECT_EQ(p.tool_calls[1].id, "call_x1");
}

TEST(OutputParser, ArgumentsStreamBeforeTheCallCloses) {
  OutputParser p(OutputFormat::kHermes, ParseOptions{});
  auto events = p.Feed("Hi.\n<tool_call>\n{\"name\": \"write\", \"arguments\": {\"text\": \"hello wor");
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].kind, OutputEvent::Kind::kContent);
  EXPECT_EQ(events[0].text, "Hi.");
  EXPECT_EQ(events[1].kind, OutputEvent::Kind::kToolCallStart);
  EXPECT_EQ(events[1].name, "write");
  EXPECT_EQ(events[1].id, "call_0");
  EXPECT_EQ(events[2].kind, OutputEvent::Kind::kToolCallArguments);
  EXPECT_EQ(events[2].text, "{\"text\": \"hello wor");
  events = p.Feed("ld\"}}\n</tool_call>");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].text, "ld\"}");
  EXPECT_EQ(events[1].kind, OutputEvent::Kind::kToolCallEnd);
}

TEST(OutputParser, HoldsOnlyWhatCouldBeAMarker) {
  OutputParser p(OutputFormat::kHermes, ParseOptions{});
  auto events = p.Feed("Hello <tool_ca");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, "Hello");
  events = p.Feed("t is a cat");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, " <tool_cat is a cat");
}

}  // namespace
}  // namespace llmhost::output_parser_json_formats_test
