// Tool calls and reasoning through the API formatters and ChoiceOutput:
// OpenAI message.tool_calls / reasoning_content and their stream deltas,
// Anthropic thinking / text / tool_use blocks and their stream events, the
// plan of what a request's output is parsed as.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/choice_output.h"
#include "tokenizer/tokenizer.h"
#include "server/output_plan.h"
#include "server/response_format.h"

namespace llmhost::server::tool_response_test {
namespace {

using Json = nlohmann::json;
using Kind = OutputEvent::Kind;

ResponseMeta Meta() {
  ResponseMeta m;
  m.id = "id-1";
  m.model = "tiny";
  m.created = 1700000000;
  return m;
}

// (event, data) of each SSE event.
std::vector<std::pair<std::string, Json>> Sse(const std::string& sse) {
  std::vector<std::pair<std::string, Json>> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    size_t end = sse.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string block = sse.substr(pos, end - pos);
    pos = end + 2;
    std::string event, data;
    size_t lpos = 0;
    while (lpos < block.size()) {
      size_t lend = block.find('\n', lpos);
      if (lend == std::string::npos) lend = block.size();
      std::string line = block.substr(lpos, lend - lpos);
      if (line.rfind("event: ", 0) == 0) event = line.substr(7);
      if (line.rfind("data: ", 0) == 0) data = line.substr(6);
      lpos = lend + 1;
    }
    out.emplace_back(event, data == "[DONE]" ? Json("[DONE]") : Json::parse(data));
  }
  return out;
}

// Hermes output with reasoning, text and two calls, as a hermes parser sees it.
OutputPlan HermesPlan(bool parallel = true) {
  OutputPlan p;
  p.enabled = true;
  p.format = OutputFormat::kHermes;
  p.options.reasoning = true;
  p.options.call_id_prefix = "call_x";
  p.parallel = parallel;
  return p;
}

const char* kTwoCalls =
    "<think>\nplan it\n</think>\n\nLet me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": "
    "\"CET\"}}\n</tool_call>";

// Feeds `text` `step` bytes at a time through ChoiceOutput into the formatter.
std::string Drive(ResponseFormatter& f, const OutputPlan& plan, const std::string& text, size_t step,
                FinishReason reason = FinishReason::kStop) {
  ChoiceOutput out(plan);
  std::string sse = f.Start(0, {10, 0, 0});
  for (size_t i = 0; i < text.size(); i += step) sse += f.Events(0, out.Feed(text.substr(i, step)), {});
  sse += f.Events(0, out.Finish(), {});
  sse += f.FinishChoice(0, reason, "");
  return sse + f.End({10, 0, 7});
}

TEST(ToolCallsOpenAI, NonStreamingMessage) {
  auto f = MakeChatCompletionsFormatter(Meta(), false);
  Json j = Json::parse(Drive(*f, HermesPlan(), kTwoCalls, 1000));
  const Json& c = j["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_EQ(c["message"]["content"], "Let me look.");
  EXPECT_EQ(c["message"]["reasoning_content"], "plan it");
  ASSERT_EQ(c["message"]["tool_calls"].size(), 2u);
  const Json& t0 = c["message"]["tool_calls"][0];
  EXPECT_EQ(t0["id"], "call_x0");
  EXPECT_EQ(t0["type"], "function");
  EXPECT_EQ(t0["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(t0["function"]["arguments"].get<std::string>()), Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(c["message"]["tool_calls"][1]["function"]["name"], "get_time");
  EXPECT_EQ(c["message"]["tool_calls"][1]["id"], "call_x1");
}

TEST(ToolCallsOpenAI, StreamedDeltasAddUpAtEveryChunking) {
  for (size_t step : {size_t{1}, size_t{3}, size_t{17}, size_t{1000}}) {
    auto f = MakeChatCompletionsFormatter(Meta(), true);
    std::string content, reasoning, finish;
    std::vector<Json> calls;
    for (auto& [event, d] : Sse(Drive(*f, HermesPlan(), kTwoCalls, step))) {
      if (d == "[DONE]" || d["choices"].empty()) continue;
      const Json& delta = d["choices"][0]["delta"];
      if (delta.contains("content")) content += delta["content"].get<std::string>();
      if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
      if (!d["choices"][0]["finish_reason"].is_null()) finish = d["choices"][0]["finish_reason"];
      for (const Json& t : delta.value("tool_calls", Json::array())) {
        const size_t i = t["index"];
        if (i == calls.size()) {
          // The first chunk of a call: id, type and name, no arguments yet.
          EXPECT_TRUE(t.contains("id") && t["type"] == "function" && t["function"].contains("name")) << t;
          calls.push_back(t);
          continue;
        }
        ASSERT_LT(i, calls.size());
        EXPECT_FALSE(t.contains("id")) << "later chunks carry arguments only";
        calls[i]["function"]["arguments"] =
            calls[i]["function"]["arguments"].get<std::string>() + t["function"]["arguments"].get<std::string>();
      }
    }
    EXPECT_EQ(content, "Let me look.") << step;
    EXPECT_EQ(reasoning, "plan it") << step;
    EXPECT_EQ(finish, "tool_calls");
    ASSERT_EQ(calls.size(), 2u) << step;
    EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
    EXPECT_EQ(Json::parse(calls[0]["function"]["arguments"].get<std::string>()), Json::parse(R"({"city": "Paris"})"));
    EXPECT_EQ(Json::parse(calls[1]["function"]["arguments"].get<std::string>()), Json::parse(R"({"tz": "CET"})"));
  }
}

TEST(ToolCallsOpenAI, ParallelOffKeepsTheFirstCall) {
  auto f = MakeChatCompletionsFormatter(Meta(), false);
  Json j = Json::parse(Drive(*f, HermesPlan(/*parallel=*/false), kTwoCalls, 5));
  const Json& m = j["choices"][0]["message"];
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(m["content"], "Let me look.");
}

TEST(ToolCallsOpenAI, MalformedMarkupIsContentAndLengthStaysLength) {
  auto f = MakeChatCompletionsFormatter(Meta(), false);
  const std::string text = "Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {oops}}\n</tool_call>";
  Json j = Json::parse(Drive(*f, HermesPlan(), text, 4));
  const Json& c = j["choices"][0];
  EXPECT_EQ(c["message"]["content"], text);
  EXPECT_FALSE(c["message"].contains("tool_calls"));
  EXPECT_EQ(c["finish_reason"], "stop");
  auto g = MakeChatCompletionsFormatter(Meta(), false);
  Json k = Json::parse(Drive(*g, HermesPlan(), kTwoCalls, 1000, FinishReason::kLength));
  EXPECT_EQ(k["choices"][0]["finish_reason"], "length");
}

TEST(ToolCallsOpenAI, WithoutAPlanTextIsContentVerbatim) {
  auto f = MakeChatCompletionsFormatter(Meta(), false);
  Json j = Json::parse(Drive(*f, OutputPlan{}, kTwoCalls, 7));
  EXPECT_EQ(j["choices"][0]["message"]["content"], kTwoCalls);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

TEST(ToolCallsAnthropic, NonStreamingBlocks) {
  OutputPlan plan = HermesPlan();
  plan.options.call_id_prefix = "toolu_x";
  auto f = MakeMessagesFormatter(Meta(), false);
  Json j = Json::parse(Drive(*f, plan, kTwoCalls, 1000));
  EXPECT_EQ(j["stop_reason"], "tool_use");
  const Json& c = j["content"];
  ASSERT_EQ(c.size(), 4u) << c;
  EXPECT_EQ(c[0]["type"], "thinking");
  EXPECT_EQ(c[0]["thinking"], "plan it");
  EXPECT_FALSE(c[0]["signature"].get<std::string>().empty());
  EXPECT_EQ(c[1], Json::parse(R"({"type": "text", "text": "Let me look."})"));
  EXPECT_EQ(c[2], Json::parse(R"({"type": "tool_use", "id": "toolu_x0", "name": "get_weather", "input": {"city": "Paris"}})"));
  EXPECT_EQ(c[3]["input"], Json::parse(R"({"tz": "CET"})"));
}

TEST(ToolCallsAnthropic, StreamEventsInOrderWithIndexes) {
  for (size_t step : {size_t{1}, size_t{9}, size_t{1000}}) {
    auto f = MakeMessagesFormatter(Meta(), true);
    auto ev = Sse(Drive(*f, HermesPlan(), kTwoCalls, step));
    ASSERT_FALSE(ev.empty());
    EXPECT_EQ(ev.front().first, "message_start");
    EXPECT_EQ(ev.back().first, "message_stop");
    // Rebuild the blocks as a client does, checking the protocol on the way.
    std::vector<Json> blocks;
    int open = -1;
    std::string stop_reason;
    for (auto& [name, d] : ev) {
      EXPECT_EQ(d["type"], name);
      if (name == "content_block_start") {
        EXPECT_EQ(open, -1) << "a block starts while another is open";
        EXPECT_EQ(d["index"], blocks.size());
        open = d["index"];
        blocks.push_back(d["content_block"]);
        if (blocks.back()["type"] == "tool_use") blocks.back()["partial"] = "";
      } else if (name == "content_block_delta") {
        ASSERT_EQ(d["index"], open);
        Json& b = blocks[static_cast<size_t>(open)];
        const Json& delta = d["delta"];
        if (delta["type"] == "text_delta") b["text"] = b["text"].get<std::string>() + delta["text"].get<std::string>();
        if (delta["type"] == "thinking_delta") {
          EXPECT_EQ(b["signature"], "") << "the signature comes after the thinking";
          b["thinking"] = b["thinking"].get<std::string>() + delta["thinking"].get<std::string>();
        }
        if (delta["type"] == "signature_delta") b["signature"] = delta["signature"];
        if (delta["type"] == "input_json_delta") {
          b["partial"] = b["partial"].get<std::string>() + delta["partial_json"].get<std::string>();
        }
      } else if (name == "content_block_stop") {
        EXPECT_EQ(d["index"], open);
        open = -1;
      } else if (name == "message_delta") {
        stop_reason = d["delta"]["stop_reason"];
      }
    }
    EXPECT_EQ(open, -1);
    EXPECT_EQ(stop_reason, "tool_use");
    ASSERT_EQ(blocks.size(), 4u) << step;
    EXPECT_EQ(blocks[0]["type"], "thinking");
    EXPECT_EQ(blocks[0]["thinking"], "plan it");
    EXPECT_FALSE(blocks[0]["signature"].get<std::string>().empty());
    EXPECT_EQ(blocks[1]["text"], "Let me look.");
    EXPECT_EQ(blocks[2]["name"], "get_weather");
    EXPECT_EQ(blocks[2]["input"], Json::object());
    EXPECT_EQ(Json::parse(blocks[2]["partial"].get<std::string>()), Json::parse(R"({"city": "Paris"})"));
    EXPECT_EQ(Json::parse(blocks[3]["partial"].get<std::string>()), Json::parse(R"({"tz": "CET"})"));
  }
}

TEST(ToolCallsAnthropic, AnEmptyOutputStillHasOneTextBlock) {
  auto f = MakeMessagesFormatter(Meta(), true);
  auto ev = Sse(Drive(*f, HermesPlan(), "", 1));
  std::vector<std::string> names;
  for (auto& [n, d] : ev) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "content_block_stop",
                                             "message_delta", "message_stop"}));
}

TEST(OutputPlanTest, ThinkBlockOpenedByThePrompt) {
  EXPECT_TRUE(PromptOpensThinkBlock("<|im_start|>assistant\n<think>\n", "<think>", "</think>"));
  EXPECT_FALSE(PromptOpensThinkBlock("<|im_start|>assistant\n<think>\n\n</think>\n\n", "<think>", "</think>"));
  EXPECT_FALSE(PromptOpensThinkBlock("<|im_start|>assistant\n", "<think>", "</think>"));
  // A user quoting an open tag long before the generation prompt does not count.
  EXPECT_FALSE(PromptOpensThinkBlock("user: <think>" + std::string(200, 'x') + "<|im_start|>assistant\n", "<think>",
                                     "</think>"));
  EXPECT_FALSE(PromptOpensThinkBlock("anything", "", ""));
}

TEST(OutputPlanTest, ThinkingSwitch) {
  using OJ = nlohmann::ordered_json;
  EXPECT_TRUE(ThinkingEnabled(OJ::object()));
  EXPECT_TRUE(ThinkingEnabled(OJ{{"enable_thinking", true}}));
  EXPECT_FALSE(ThinkingEnabled(OJ{{"enable_thinking", false}}));
  EXPECT_FALSE(ThinkingEnabled(OJ{{"thinking", false}}));
}

// A model whose vocabulary marks Kimi-K2's tool markup and its end of turn
// as special tokens.
ServedModel KimiLikeModel() {
  nlohmann::json added = nlohmann::json::array();
  int id = 3;
  for (const char* t : {"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>",
                        "<|tool_call_end|>", "<|tool_calls_section_end|>", "<|im_end|>"}) {
    added.push_back({{"id", id++}, {"content", t}, {"special", true}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}});
  }
  nlohmann::json doc = {
      {"model", {{"type", "WordLevel"}, {"vocab", {{"[UNK]", 0}, {"a", 1}, {"</think>", 2}}}, {"unk_token", "[UNK]"}}},
      {"added_tokens", added}};
  ServedModel m;
  auto tok = Tokenizer::FromJson(doc);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  m.tokenizer = std::move(*tok);
  m.output_format.format = OutputFormat::kKimiK2;
  m.output_format.reasoning = true;
  return m;
}

TEST(OutputPlanTest, KeepsTheMarkupSpecialTokensAndPlansTheBudget) {
  ServedModel model = KimiLikeModel();
  InferenceRequest r;
  r.api = ApiKind::kMessages;
  r.reasoning_budget = 2048;
  GenerationRequest gen;
  OutputPlan plan = PlanOutput(r, model, ModelSettings(), "<|im_start|>assistant\n<think>\n", &gen);
  EXPECT_TRUE(plan.enabled);
  EXPECT_EQ(plan.format, OutputFormat::kKimiK2);
  EXPECT_TRUE(plan.options.reasoning);
  EXPECT_TRUE(plan.options.starts_in_reasoning);
  EXPECT_EQ(plan.options.call_id_prefix.rfind("toolu_", 0), 0u);
  // The five markup tokens are kept; the end of turn is not.
  std::vector<int32_t> keep = gen.keep_special_ids;
  std::sort(keep.begin(), keep.end());
  EXPECT_EQ(keep, (std::vector<int32_t>{3, 4, 5, 6, 7}));
  ASSERT_TRUE(gen.reasoning_budget.has_value());
  EXPECT_EQ(gen.reasoning_budget->budget_tokens, 2048);
  EXPECT_TRUE(gen.reasoning_budget->starts_open);
  EXPECT_EQ(gen.reasoning_budget->close, "</think>");
  EXPECT_FALSE(gen.reasoning_budget->close_ids.empty());

  // The tool_parser setting wins over the template's; tool_choice none parses no calls.
  ModelSettings hermes;
  hermes.tool_parser = "hermes";
  GenerationRequest g2;
  EXPECT_EQ(PlanOutput(r, model, hermes, "", &g2).format, OutputFormat::kHermes);
  r.tool_choice.mode = ToolChoice::kNone;
  EXPECT_EQ(PlanOutput(r, model, hermes, "", &g2).format, OutputFormat::kNone);
  // Thinking off: no think block, no budget.
  r.chat_template_kwargs["enable_thinking"] = false;
  GenerationRequest g3;
  OutputPlan off = PlanOutput(r, model, ModelSettings(), "<|im_start|>assistant\n<think>\n", &g3);
  EXPECT_FALSE(off.options.reasoning);
  EXPECT_FALSE(g3.reasoning_budget.has_value());
  // The completions API returns raw text.
  r.api = ApiKind::kCompletions;
  GenerationRequest g4;
  EXPECT_FALSE(PlanOutput(r, model, ModelSettings(), "", &g4).enabled);
  EXPECT_TRUE(g4.keep_special_ids.empty());
}

TEST(ChoiceOutputTest, ReasoningOffLeavesThinkMarkupAsContent) {
  OutputPlan plan = HermesPlan();
  plan.options.reasoning = false;
  ChoiceOutput out(plan);
  std::string content;
  for (const OutputEvent& e : out.Feed("<think>x</think>y")) content += e.kind == Kind::kContent ? e.text : "?";
  for (const OutputEvent& e : out.Finish()) content += e.kind == Kind::kContent ? e.text : "?";
  EXPECT_EQ(content, "<think>x</think>y");
}

}  // namespace
}  // namespace llmhost::server::tool_response_test
