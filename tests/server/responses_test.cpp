// The Responses API: request items → chat messages (ParseResponsesRequest,
// with previous_response_id through the ResponseStore) and the response
// object and stream events (MakeResponsesFormatter).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/choice_output.h"
#include "server/openai_request.h"
#include "server/response_format.h"
#include "server/response_store.h"
#include "server/responses_request.h"

namespace llmhost::server::responses_test {
namespace {

using Json = nlohmann::ordered_json;

MaybeError Parse(const std::string& body, InferenceRequest* r, const ResponseStore& store = ResponseStore()) {
  return ParseResponsesRequest(OJson::parse(body), store, r);
}

TEST(ResponsesRequest, InputItemsBecomeChatMessages) {
  InferenceRequest r;
  MaybeError e = Parse(R"({"model": "m", "instructions": "Be brief.", "input": [
      {"role": "developer", "content": "Use tools."},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
      {"type": "reasoning", "summary": [{"type": "summary_text", "text": "need a tool"}]},
      {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
      {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
      {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "noon"}]}],
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
              {"type": "web_search"}, {"type": "namespace", "name": "x"}],
    "reasoning": {"effort": "low"}, "max_output_tokens": 100, "temperature": 0.5})", &r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(r.api, ApiKind::kResponses);
  const Json& m = r.messages;
  ASSERT_EQ(m.size(), 6u) << m.dump();
  EXPECT_EQ(m[0], Json::parse(R"({"role": "system", "content": "Be brief."})"));
  EXPECT_EQ(m[1], Json::parse(R"({"role": "system", "content": "Use tools."})"));
  EXPECT_EQ(m[2], Json::parse(R"({"role": "user", "content": "Weather?"})"));
  EXPECT_EQ(m[3]["role"], "assistant");
  EXPECT_EQ(m[3]["reasoning_content"], "need a tool");
  ASSERT_EQ(m[3]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[3]["tool_calls"][0]["function"]["arguments"], Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(m[4], Json::parse(R"({"role": "tool", "tool_call_id": "call_1", "content": "sunny"})"));
  EXPECT_EQ(m[5]["content"], "noon");
  // Instructions are not part of the conversation a stored response continues.
  EXPECT_EQ(r.responses_conversation.size(), 5u);
  // Only the function tool reaches the template.
  ASSERT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0]["function"]["name"], "get_weather");
  EXPECT_EQ(r.responses_echo["tools"].size(), 3u) << "echoed as sent";
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], true);
  EXPECT_EQ(r.reasoning_budget, 1024);
  EXPECT_EQ(r.sampling.max_tokens, 100);
  EXPECT_EQ(r.responses_echo["store"], true);
}

TEST(ResponsesRequest, BadValuesAre400sNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"input": "x"})", "model"},
      {R"({"model": "m"})", "input"},
      {R"({"model": "m", "input": 3})", "input"},
      {R"({"model": "m", "input": [{"type": "computer_call"}]})", "input[0].type"},
      {R"({"model": "m", "input": [{"role": "robot", "content": "x"}]})", "input[0].role"},
      {R"({"model": "m", "input": [{"type": "function_call", "name": "f"}]})", "input[0].call_id"},
      {R"({"model": "m", "input": "x", "tool_choice": "required"})", "tool_choice"},
      {R"({"model": "m", "input": "x", "tool_choice": {"type": "function", "name": "g"}, "tools": [{"type": "function", "name": "f"}]})", "tool_choice.name"},
      {R"({"model": "m", "input": "x", "reasoning": {"effort": "huge"}})", "reasoning.effort"},
      {R"({"model": "m", "input": "x", "text": {"format": {"type": "json_schema"}}})", "text.format.schema"},
      {R"({"model": "m", "input": "x", "previous_response_id": "resp_missing"})", "previous_response_id"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": {"type": "string"}}]})", "tools[0].parameters.type"},
  };
  for (const auto& [body, param] : cases) {
    InferenceRequest r;
    MaybeError e = Parse(body, &r);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400) << body;
    EXPECT_EQ(e->param, param) << body << ": " << e->message;
  }
  InferenceRequest off;
  ASSERT_FALSE(Parse(R"({"model": "m", "input": "x", "reasoning": {"effort": "minimal"}})", &off));
  EXPECT_EQ(off.chat_template_kwargs["enable_thinking"], false);
  EXPECT_FALSE(off.reasoning_budget.has_value());
}

TEST(ReasoningEffortTest, ChatCompletionsReasoningEffort) {
  auto parse = [](const std::string& extra, InferenceRequest* r) {
    return ParseChatCompletionsRequest(
        OJson::parse(R"({"model": "m", "messages": [{"role": "user", "content": "x"}])" + extra + "}"), r);
  };
  InferenceRequest high;
  ASSERT_FALSE(parse(R"(, "reasoning_effort": "high")", &high));
  EXPECT_EQ(high.chat_template_kwargs["enable_thinking"], true);
  EXPECT_EQ(high.reasoning_budget, 16384);
  InferenceRequest none;
  ASSERT_FALSE(parse(R"(, "reasoning_effort": "none")", &none));
  EXPECT_EQ(none.chat_template_kwargs["enable_thinking"], false);
  EXPECT_FALSE(none.reasoning_budget.has_value());
  // The request's own switch wins over the effort's.
  InferenceRequest own;
  ASSERT_FALSE(parse(R"(, "reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": false})", &own));
  EXPECT_EQ(own.chat_template_kwargs["enable_thinking"], false);
  InferenceRequest bad;
  MaybeError e = parse(R"(, "reasoning_effort": "max")", &bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "reasoning_effort");
}

TEST(ResponsesRequest, PreviousResponseIdContinuesTheStoredConversation) {
  ResponseStore store;
  store.Put("resp_1", StoredResponse{Json::object(), Json::parse(R"([{"role": "user", "content": "Hi"},
                                                                       {"role": "assistant", "content": "Hello"}])")});
  InferenceRequest r;
  ASSERT_FALSE(Parse(R"({"model": "m", "previous_response_id": "resp_1", "instructions": "New rules.",
                         "input": "And now?"})", &r, store));
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0]["content"], "New rules.");
  EXPECT_EQ(r.messages[1]["content"], "Hi");
  EXPECT_EQ(r.messages[2]["content"], "Hello");
  EXPECT_EQ(r.messages[3]["content"], "And now?");
  EXPECT_EQ(r.responses_echo["previous_response_id"], "resp_1");
}

TEST(ResponseStoreTest, BoundedOldestFirst) {
  ResponseStore store;
  for (size_t i = 0; i < ResponseStore::kMaxResponses + 5; ++i) store.Put("r" + std::to_string(i), StoredResponse{});
  EXPECT_EQ(store.size(), ResponseStore::kMaxResponses);
  EXPECT_FALSE(store.Get("r0").has_value());
  EXPECT_TRUE(store.Get("r" + std::to_string(ResponseStore::kMaxResponses + 4)).has_value());
}

ResponseMeta Meta() {
  ResponseMeta m;
  m.id = "resp_1";
  m.model = "tiny";
  m.created = 1700000000;
  return m;
}

OutputPlan Hermes() {
  OutputPlan p;
  p.enabled = true;
  p.format = OutputFormat::kHermes;
  p.options.reasoning = true;
  p.options.call_id_prefix = "call_x";
  return p;
}

const char* kOutput =
    "<think>\nweigh it\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>";

// Feeds kOutput in `step`-byte pieces (one engine event each).
std::string Drive(ResponseFormatter& f, size_t step, FinishReason reason = FinishReason::kStop) {
  ChoiceOutput out(Hermes());
  const std::string text = kOutput;
  std::string body = f.Start(0, {10, 2, 0});
  for (size_t i = 0; i < text.size(); i += step) body += f.Events(0, out.Feed(text.substr(i, step)), {});
  body += f.Events(0, out.Finish(), {});
  body += f.FinishChoice(0, reason, "");
  return body + f.End({10, 2, 30});
}

TEST(ResponsesFormat, NonStreamingOutputItemsAndStore) {
  Json stored, assistant;
  auto f = MakeResponsesFormatter(Meta(), false, Json{{"store", true}, {"instructions", nullptr}},
                                  [&](const Json& r, const Json& a) { stored = r, assistant = a; });
  Json r = Json::parse(Drive(*f, 1000));
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["store"], true);
  ASSERT_EQ(r["output"].size(), 3u) << r.dump();
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "weigh it");
  EXPECT_EQ(r["output"][1]["type"], "message");
  EXPECT_EQ(r["output"][1]["content"][0], Json::parse(R"({"type": "output_text", "text": "Checking.", "annotations": [], "logprobs": []})"));
  const Json& call = r["output"][2];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["call_id"], "call_x0");
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(Json::parse(call["arguments"].get<std::string>()), Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(r["usage"]["input_tokens"], 10);
  EXPECT_EQ(r["usage"]["input_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(r["usage"]["output_tokens"], 30);
  EXPECT_EQ(r["usage"]["total_tokens"], 40);
  EXPECT_EQ(stored, r);
  EXPECT_EQ(assistant["content"], "Checking.");
  EXPECT_EQ(assistant["reasoning_content"], "weigh it");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["arguments"], Json::parse(R"({"city": "Paris"})"));

  auto g = MakeResponsesFormatter(Meta(), false, Json::object(), nullptr);
  Json cut = Json::parse(Drive(*g, 1000, FinishReason::kLength));
  EXPECT_EQ(cut["status"], "incomplete");
  EXPECT_EQ(cut["incomplete_details"]["reason"], "max_output_tokens");
}

TEST(ResponsesFormat, StreamEventsInOrder) {
  for (size_t step : {size_t{1}, size_t{7}, size_t{1000}}) {
    auto f = MakeResponsesFormatter(Meta(), true, Json::object(), nullptr);
    const std::string sse = Drive(*f, step);
    std::vector<std::string> types;
    std::string reasoning, text, args;
    int64_t seq = 0;
    Json completed;
    size_t pos = 0;
    while (pos < sse.size()) {
      size_t end = sse.find("\n\n", pos);
      ASSERT_NE(end, std::string::npos);
      std::string block = sse.substr(pos, end - pos);
      pos = end + 2;
      const size_t data = block.find("data: ");
      ASSERT_NE(data, std::string::npos) << block;
      Json j = Json::parse(block.substr(data + 6));
      EXPECT_EQ(block.substr(7, block.find('\n') - 7), j["type"]) << "the event name is its type";
      EXPECT_EQ(j["sequence_number"], seq++);
      const std::string type = j["type"];
      if (type == "response.reasoning_text.delta") reasoning += j["delta"].get<std::string>();
      if (type == "response.output_text.delta") text += j["delta"].get<std::string>();
      if (type == "response.function_call_arguments.delta") args += j["delta"].get<std::string>();
      if (type == "response.completed") completed = j["response"];
      if (types.empty() || types.back() != type) types.push_back(type);
    }
    EXPECT_EQ(types, (std::vector<std::string>{
                         "response.created", "response.in_progress",
                         "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
                         "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
                         "response.output_item.added", "response.content_part.added", "response.output_text.delta",
                         "response.output_text.done", "response.content_part.done", "response.output_item.done",
                         "response.output_item.added", "response.function_call_arguments.delta",
                         "response.function_call_arguments.done", "response.output_item.done", "response.completed"}))
        << step;
    EXPECT_EQ(reasoning, "weigh it");
    EXPECT_EQ(text, "Checking.");
    EXPECT_EQ(Json::parse(args), Json::parse(R"({"city": "Paris"})"));
    EXPECT_EQ(completed["output"].size(), 3u);
    EXPECT_EQ(completed["status"], "completed");
  }
}

}  // namespace
}  // namespace llmhost::server::responses_test
