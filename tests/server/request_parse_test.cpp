// Request JSON → InferenceRequest: OpenAI chat/completions and Anthropic
// messages, their conversions to chat-template messages, and the 400s
// (with `param`) for every kind of bad input.
#include <gtest/gtest.h>

#include <string>

#include "server/anthropic_request.h"
#include "server/json_fields.h"
#include "server/openai_request.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::server::request_parse_test {
namespace {

OJson J(const char* text) { return OJson::parse(text); }

InferenceRequest MustParseChat(const char* body) {
  InferenceRequest r;
  MaybeError e = ParseChatCompletionsRequest(J(body), &r);
  EXPECT_FALSE(e) << e->message;
  return r;
}

ApiError ChatError(const char* body) {
  InferenceRequest r;
  MaybeError e = ParseChatCompletionsRequest(J(body), &r);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

TEST(JsonBody, MalformedEmptyDeepAndNonObject) {
  OJson j;
  auto e = ParseJsonObject("", &j);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_NE(e->message.find("empty"), std::string::npos);
  e = ParseJsonObject("{\"a\": ", &j);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("not valid JSON"), std::string::npos);
  e = ParseJsonObject("[1,2]", &j);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("must be a JSON object"), std::string::npos);
  std::string deep(100000, '[');
  e = ParseJsonObject(deep, &j);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("nests deeper"), std::string::npos);
  // Brackets inside strings do not count as nesting.
  std::string s = "{\"a\": \"" + std::string(1000, '[') + "\"}";
  EXPECT_FALSE(ParseJsonObject(s, &j));
  // Invalid UTF-8 inside a string is malformed JSON.
  EXPECT_TRUE(ParseJsonObject("{\"a\": \"\xff\"}", &j));
}

TEST(JsonBody, IntegerReaderAcceptsWholeFloatsOnly) {
  std::optional<int64_t> v;
  EXPECT_FALSE(ReadInteger(J(R"({"n": 5.0})"), "n", "", 0, 10, &v));
  EXPECT_EQ(v, 5);
  auto e = ReadInteger(J(R"({"n": 5.5})"), "n", "", 0, 10, &v);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "n");
  e = ReadInteger(J(R"({"n": "5"})"), "n", "x", 0, 10, &v);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "x.n");
  EXPECT_NE(e->message.find("got a string"), std::string::npos);
  e = ReadInteger(J(R"({"n": 18446744073709551615})"), "n", "", 0, 10, &v);
  ASSERT_TRUE(e);
}

TEST(OpenAIChat, MessagesBecomeTemplateMessages) {
  InferenceRequest r = MustParseChat(R"({
    "model": "m", "unknown_field": {"ignored": true},
    "messages": [
      {"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get", "arguments": "{\"city\": \"Paris\", \"n\": 2}"}},
        {"id": "call_2", "type": "function", "function": {"name": "raw", "arguments": "not json"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
      {"role": "system", "content": "late system"}
    ]})");
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[0]["content"], "be brief");
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  EXPECT_EQ(r.messages[2]["content"], "");
  const OJson& calls = r.messages[2]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["id"], "call_1");
  // Arguments are handed to the template as a mapping, keys in order.
  EXPECT_EQ(calls[0]["function"]["arguments"].dump(), R"({"city":"Paris","n":2})");
  EXPECT_EQ(calls[1]["function"]["arguments"], "not json");
  EXPECT_EQ(r.messages[3]["role"], "tool");
  EXPECT_EQ(r.messages[3]["tool_call_id"], "call_1");
  EXPECT_EQ(r.messages[4]["role"], "system");
  EXPECT_TRUE(r.tools.is_null());
  EXPECT_FALSE(r.stream);
}

TEST(OpenAIChat, SamplingStreamToolsAndKwargs) {
  InferenceRequest r = MustParseChat(R"({
    "model": "m", "messages": [{"role": "user", "content": "hi"}],
    "stream": true, "stream_options": {"include_usage": true},
    "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "seed": -1,
    "max_tokens": 100, "max_completion_tokens": 50, "stop": ["END", ""], "stop_token_ids": [7],
    "logprobs": true, "top_logprobs": 3, "n": 16,
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}],
    "chat_template_kwargs": {"enable_thinking": false},
    "response_format": {"type": "text"}})");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.choices, 16);
  const SamplingRequest& s = r.sampling;
  EXPECT_EQ(s.temperature, 0.5);
  EXPECT_EQ(s.top_p, 0.9);
  EXPECT_EQ(s.top_k, 40);
  EXPECT_EQ(s.min_p, 0.05);
  EXPECT_EQ(s.repetition_penalty, 1.1);
  EXPECT_EQ(s.presence_penalty, 0.5);
  EXPECT_EQ(s.frequency_penalty, -0.5);
  EXPECT_EQ(s.seed, UINT64_MAX);
  EXPECT_EQ(s.max_tokens, 50);  // max_completion_tokens wins
  EXPECT_EQ(s.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(s.stop_token_ids, std::vector<int32_t>{7});
  EXPECT_TRUE(s.logprobs);
  EXPECT_EQ(s.top_logprobs, 3);
  ASSERT_TRUE(r.tools.is_array());
  // Schemas keep their key order (the template prints them).
  EXPECT_EQ(r.tools[0]["function"]["parameters"].dump(), R"({"z":1,"a":2})");
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
  const SamplingRequest biased =
      MustParseChat(R"({"model":"m","messages":[{"role":"user","content":"x"}],"logit_bias":{"7":-100,"42":2.5}})").sampling;
  EXPECT_EQ(biased.logit_bias, (std::vector<std::pair<int32_t, float>>{{7, -100.0f}, {42, 2.5f}}));
  EXPECT_EQ(MustParseChat(R"({"model":"m","messages":[{"role":"user","content":"x"}],"stop":"S"})").sampling.stop,
            std::vector<std::string>{"S"});
}

TEST(OpenAIChat, ErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  } cases[] = {
      {R"({"messages": [{"role": "user", "content": "x"}]})", "model"},
      {R"({"model": 3, "messages": [{"role": "user", "content": "x"}]})", "model"},
      {R"({"model": "m"})", "messages"},
      {R"({"model": "m", "messages": []})", "messages"},
      {R"({"model": "m", "messages": "hi"})", "messages"},
      {R"({"model": "m", "messages": [42]})", "messages[0]"},
      {R"({"model": "m", "messages": [{"content": "x"}]})", "messages[0].role"},
      {R"({"model": "m", "messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"model": "m", "messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})",
       "messages[0].content[0].type"},
      {R"({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]})",
       "messages[0].tool_calls[0].function.name"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": -1})", "max_tokens"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": -1})", "temperature"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "top_p": 1.5})", "top_p"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop[0]"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 17})", "n"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 0})", "n"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 21, "logprobs": true})", "top_logprobs"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": {}})", "tools"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})", "tools[0].function"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema"}})",
       "response_format.schema"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": []})",
       "chat_template_kwargs"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
           "chat_template_kwargs": {"a": [[[[[[[[[1]]]]]]]]]}})", "chat_template_kwargs.a"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"messages": []}})",
       "chat_template_kwargs.messages"},
      // Tool schemas and tool_choice.
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "f", "parameters": "notaschema"}}]})",
       "tools[0].function.parameters"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}]})",
       "tools[0].function.parameters.type"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}]})",
       "tools[0].function.parameters.type"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "f", "parameters":
             {"type": "object", "properties": {"p": {"type": "strin"}}}}}]})",
       "tools[0].function.parameters.properties.p.type"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "f", "parameters":
             {"type": "object", "properties": {"p": 3}}}}]})",
       "tools[0].function.parameters.properties.p"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "f", "parameters": {"required": "p"}}}]})",
       "tools[0].function.parameters.required"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes"})", "tool_choice"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": 1})", "tool_choice"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "tool_choice"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "tool"}})",
       "tool_choice.type"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "f"}}],
           "tool_choice": {"type": "function", "function": {"name": "g"}}})",
       "tool_choice.function.name"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
           "tools": [{"type": "function", "function": {"name": "f"}}],
           "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "always", "tools": []}}})",
       "tool_choice.allowed_tools.mode"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "parallel_tool_calls": "no"})",
       "parallel_tool_calls"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": [1]})", "logit_bias"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {"abc": 1}})", "logit_bias"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {"-3": 1}})", "logit_bias"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {"12": 101}})",
       "logit_bias.12"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {"12": "up"}})",
       "logit_bias.12"},
  };
  for (const Case& c : cases) {
    ApiError e = ChatError(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << " → " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(OpenAIChat, ToolChoiceDecidesWhichToolsTheModelSees) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": ["integer", "null"]}]},
       "b": {"type": "array", "items": {"type": "object", "additionalProperties": false}}}, "required": ["a"]}}},
      {"type": "function", "function": {"name": "g"}}])";
  auto parse = [&](const std::string& choice) {
    const std::string body = R"({"model": "m", "messages": [{"role": "user", "content": "x"}], )" + tools +
                             (choice.empty() ? "" : ", \"tool_choice\": " + choice) + "}";
    InferenceRequest r;
    MaybeError e = ParseChatCompletionsRequest(OJson::parse(body), &r);
    EXPECT_FALSE(e) << choice << ": " << e->message;
    return r;
  };
  EXPECT_EQ(parse("").tools.size(), 2u);
  EXPECT_EQ(parse(R"("auto")").tools.size(), 2u);
  EXPECT_TRUE(parse(R"("none")").tools.is_null()) << "tool_choice none: the model is not shown the tools";
  // Forcing a call is parsed (the call is constrained when the model is
  // known: server/output_constraint.h).
  for (const char* forced : {R"("required")", R"({"type": "function", "function": {"name": "g"}})",
                             R"({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [{"type": "function", "function": {"name": "f"}}]}})"}) {
    EXPECT_EQ(parse(forced).tool_choice.mode, ToolChoice::kRequired) << forced;
  }
  InferenceRequest allowed = parse(
      R"({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "function", "function": {"name": "f"}}]}})");
  ASSERT_EQ(allowed.tools.size(), 1u);
  EXPECT_EQ(allowed.tools[0]["function"]["name"], "f");
  EXPECT_EQ(allowed.tool_choice.mode, ToolChoice::kAuto);
}

TEST(OpenAICompletions, PromptForms) {
  InferenceRequest r;
  ASSERT_FALSE(ParseCompletionsRequest(J(R"({"model": "m", "prompt": "Once", "logprobs": 2})"), &r));
  EXPECT_EQ(r.prompt_kind, PromptKind::kText);
  EXPECT_EQ(r.prompt_text, "Once");
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 2);
  InferenceRequest ids;
  ASSERT_FALSE(ParseCompletionsRequest(J(R"({"model": "m", "prompt": [1, 2, 3]})"), &ids));
  EXPECT_EQ(ids.prompt_kind, PromptKind::kTokens);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  InferenceRequest nested;
  ASSERT_FALSE(ParseCompletionsRequest(J(R"({"model": "m", "prompt": [[4, 5]]})"), &nested));
  EXPECT_EQ(nested.prompt_ids, (std::vector<int32_t>{4, 5}));
  InferenceRequest one;
  ASSERT_FALSE(ParseCompletionsRequest(J(R"({"model": "m", "prompt": ["x"]})"), &one));
  EXPECT_EQ(one.prompt_text, "x");
  for (const char* bad : {R"({"model": "m"})", R"({"model": "m", "prompt": [-1]})", R"({"model": "m", "prompt": []})",
                          R"({"model": "m", "prompt": ["a", "b"]})", R"({"model": "m", "prompt": {}})",
                          R"({"model": "m", "prompt": "x", "echo": true})"}) {
    InferenceRequest x;
    MaybeError e = ParseCompletionsRequest(J(bad), &x);
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->status, 400);
  }
}

TEST(AnthropicMessages, ConversationBecomesTemplateMessages) {
  InferenceRequest r;
  MaybeError e = ParseMessagesRequest(J(R"({
    "model": "m", "max_tokens": 100, "stream": true, "metadata": {"user_id": "u"},
    "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=1;"},
               {"type": "text", "text": "You are helpful.", "cache_control": {"type": "ephemeral"}},
               {"type": "text", "text": "Be brief."}],
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "What does a.txt say?"}]},
      {"role": "system", "content": "mid-conversation system"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                                        {"type": "text", "text": "Reading."},
                                        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.txt"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello"},
                                   {"type": "tool_result", "tool_use_id": "toolu_2",
                                    "content": [{"type": "text", "text": "p1"}, {"type": "text", "text": "p2"}]},
                                   {"type": "text", "text": "thanks"}]}
    ],
    "tools": [{"name": "Read", "description": "Reads a file",
               "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
              {"type": "web_search_20250305", "name": "web_search"}],
    "thinking": {"type": "adaptive"}, "stop_sequences": ["###"], "temperature": 0, "top_k": 5})"),
                                  false, &r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.sampling.max_tokens, 100);
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"###"});
  EXPECT_EQ(r.sampling.temperature, 0.0);
  EXPECT_EQ(r.sampling.top_k, 5);
  const OJson& m = r.messages;
  ASSERT_EQ(m.size(), 7u) << m.dump(1);
  // The attribution block is dropped; the other system blocks are joined.
  EXPECT_EQ(m[0], J(R"({"role": "system", "content": "You are helpful.\nBe brief."})"));
  EXPECT_EQ(m[1], J(R"({"role": "user", "content": "What does a.txt say?"})"));
  EXPECT_EQ(m[2], J(R"({"role": "system", "content": "mid-conversation system"})"));
  EXPECT_EQ(m[3]["role"], "assistant");
  EXPECT_EQ(m[3]["content"], "Reading.");
  EXPECT_EQ(m[3]["reasoning_content"], "hmm");
  EXPECT_EQ(m[3]["tool_calls"], J(R"([{"id": "toolu_1", "type": "function",
                                       "function": {"name": "Read", "arguments": {"path": "a.txt"}}}])"));
  EXPECT_EQ(m[4], J(R"({"role": "tool", "content": "hello", "tool_call_id": "toolu_1"})"));
  EXPECT_EQ(m[5], J(R"({"role": "tool", "content": "p1\np2", "tool_call_id": "toolu_2"})"));
  EXPECT_EQ(m[6], J(R"({"role": "user", "content": "thanks"})"));
  // Custom tools as OpenAI function tools; the server tool is skipped.
  ASSERT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0].dump(),
            R"({"type":"function","function":{"name":"Read","description":"Reads a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}})");
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], true);
}

TEST(AnthropicMessages, Errors) {
  struct Case {
    const char* body;
    const char* param;
  } cases[] = {
      {R"({"messages": [{"role": "user", "content": "x"}]})", "model"},
      {R"({"model": "m"})", "messages"},
      {R"({"model": "m", "messages": []})", "messages"},
      {R"({"model": "m", "messages": [{"role": "bot", "content": "x"}]})", "messages[0].role"},
      {R"({"model": "m", "messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]})",
       "messages[0].content[0].type"},
      {R"({"model": "m", "messages": [{"role": "user", "content": [{"text": "x"}]}]})", "messages[0].content[0].type"},
      {R"({"model": "m", "system": 5, "messages": [{"role": "user", "content": "x"}]})", "system"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})", "max_tokens"},
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], "stop_sequences": [1]})",
       "stop_sequences[0]"},
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], "tools": [{"description": "d"}]})",
       "tools[0].name"},
      // Tools need a JSON Schema object of type object.
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], "tools": [{"name": "t"}]})",
       "tools[0].input_schema"},
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
           "tools": [{"name": "t", "input_schema": "notaschema"}]})", "tools[0].input_schema"},
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
           "tools": [{"name": "t", "input_schema": {"type": 5}}]})", "tools[0].input_schema.type"},
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
           "tools": [{"name": "t", "input_schema": {"type": "object"}}], "tool_choice": {"type": "tool", "name": "u"}})",
       "tool_choice.name"},
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "any"}})",
       "tool_choice"},
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "some"}})",
       "tool_choice.type"},
      // Thinking budgets.
      {R"({"model": "m", "max_tokens": 8000, "messages": [{"role": "user", "content": "x"}],
           "thinking": {"type": "enabled", "budget_tokens": 1000}})", "thinking.budget_tokens"},
      {R"({"model": "m", "max_tokens": 2000, "messages": [{"role": "user", "content": "x"}],
           "thinking": {"type": "enabled", "budget_tokens": 2000}})", "thinking.budget_tokens"},
      {R"({"model": "m", "max_tokens": 2000, "messages": [{"role": "user", "content": "x"}],
           "thinking": {"type": "enabled"}})", "thinking.budget_tokens"},
      {R"({"model": "m", "max_tokens": 2000, "messages": [{"role": "user", "content": "x"}],
           "thinking": {"type": "sometimes"}})", "thinking.type"},
      {R"({"model": "m", "max_tokens": 2000, "messages": [{"role": "user", "content": "x"}], "thinking": true})",
       "thinking"},
      // Content blocks: unknown types are named; tool blocks belong to their roles.
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "hologram"}]}]})",
       "messages[0].content[0].type"},
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content":
           [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]}]})", "messages[0].content[0].type"},
      {R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content":
           [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]}]})", "messages[1].content[0].type"},
  };
  for (const Case& c : cases) {
    InferenceRequest r;
    MaybeError e = ParseMessagesRequest(J(c.body), false, &r);
    ASSERT_TRUE(e) << c.body;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, c.param) << c.body << " → " << e->message;
  }
  {
    InferenceRequest r;
    MaybeError e = ParseMessagesRequest(
        J(R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "hologram"}]}]})"),
        false, &r);
    ASSERT_TRUE(e);
    EXPECT_NE(e->message.find("'hologram'"), std::string::npos) << e->message;
  }
  // count_tokens reads no generation fields and needs no max_tokens.
  InferenceRequest r;
  EXPECT_FALSE(ParseMessagesRequest(J(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0})"),
                                    true, &r));
  EXPECT_FALSE(ParseMessagesRequest(J(R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})"), true, &r));
  // A budget at or above max_tokens is fine with interleaved thinking (Claude Code sends the beta).
  const char* big_budget = R"({"model": "m", "max_tokens": 2000, "messages": [{"role": "user", "content": "x"}],
                               "thinking": {"type": "enabled", "budget_tokens": 4000}})";
  InferenceRequest t;
  EXPECT_FALSE(ParseMessagesRequest(J(big_budget), false, &t, "claude-code-20250219,interleaved-thinking-2025-05-14"));
  EXPECT_EQ(t.chat_template_kwargs["enable_thinking"], true);
  InferenceRequest ok;
  EXPECT_FALSE(ParseMessagesRequest(J(R"({"model": "m", "max_tokens": 4000, "messages": [{"role": "user", "content": "x"}],
                                          "thinking": {"type": "enabled", "budget_tokens": 1024}})"),
                                    false, &ok));
  EXPECT_EQ(ok.reasoning_budget, 1024) << "the engine closes the think block at the budget";
  // Adaptive thinking: output_config.effort's budget (high by default); disabled: none.
  for (const auto& [config, budget] : std::vector<std::pair<std::string, std::optional<int64_t>>>{
           {"", 16384}, {R"(, "output_config": {"effort": "low"})", 1024},
           {R"(, "output_config": {"effort": "medium"})", 4096}, {R"(, "output_config": {"effort": "high"})", 16384},
           {R"(, "output_config": {"effort": "xhigh"})", 32768}, {R"(, "output_config": {"effort": "max"})", std::nullopt}}) {
    InferenceRequest a;
    MaybeError e = ParseMessagesRequest(
        OJson::parse(R"({"model": "m", "max_tokens": 32000, "messages": [{"role": "user", "content": "x"}],
                         "thinking": {"type": "adaptive"})" + config + "}"),
        false, &a);
    ASSERT_FALSE(e) << config << ": " << e->message;
    EXPECT_EQ(a.reasoning_budget, budget) << config;
  }
  InferenceRequest off;
  EXPECT_FALSE(ParseMessagesRequest(J(R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                                           "thinking": {"type": "disabled"}, "output_config": {"effort": "low"}})"),
                                    false, &off));
  EXPECT_FALSE(off.reasoning_budget.has_value());
  InferenceRequest bad_effort;
  MaybeError be = ParseMessagesRequest(J(R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                                             "thinking": {"type": "adaptive"}, "output_config": {"effort": "extreme"}})"),
                                       false, &bad_effort);
  ASSERT_TRUE(be);
  EXPECT_EQ(be->param, "output_config.effort");
  // Blocks with nothing for a local model are skipped; an empty user turn stays a turn.
  InferenceRequest skipped;
  MaybeError e = ParseMessagesRequest(J(R"({"model": "m", "max_tokens": 8, "messages": [
      {"role": "user", "content": [{"type": "redacted_thinking", "data": "x"}]}]})"),
                                      false, &skipped);
  ASSERT_FALSE(e) << e->message;
  ASSERT_EQ(skipped.messages.size(), 1u);
  EXPECT_EQ(skipped.messages[0], J(R"({"role": "user", "content": ""})"));
  // tool_choice none hides the tools; {"type": "tool"} shows only that one.
  InferenceRequest none, one;
  const std::string two_tools = R"("tools": [{"name": "a", "input_schema": {"type": "object"}},
                                            {"name": "b", "input_schema": {"type": "object"}}])";
  ASSERT_FALSE(ParseMessagesRequest(OJson::parse(R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], )" +
                                                 two_tools + R"(, "tool_choice": {"type": "none"}})"),
                                    false, &none));
  EXPECT_TRUE(none.tools.is_null());
  for (const char* forced : {R"({"type": "tool", "name": "b"})", R"({"type": "any"})"}) {
    MaybeError e = ParseMessagesRequest(OJson::parse(R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], )" +
                                                     two_tools + R"(, "tool_choice": )" + forced + "}"),
                                        false, &one);
    ASSERT_FALSE(e) << forced << ": " << e->message;
    EXPECT_EQ(one.tool_choice.mode, ToolChoice::kRequired);
  }
}

// The real Claude Code requests of ../shared/clients parse, with their tools
// and mid-conversation system messages.
TEST(AnthropicMessages, StructuredOutputAndStrictTools) {
  const std::string head = R"({"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}])";
  const std::string schema = R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})";
  for (const std::string& field : {R"("output_config": {"effort": "low", "format": {"type": "json_schema", "schema": )" +
                                      schema + "}}",
                                  R"("output_format": {"type": "json_schema", "schema": )" + schema + "}"}) {
    InferenceRequest r;
    MaybeError e = ParseMessagesRequest(OJson::parse(head + ", " + field + "}"), false, &r);
    ASSERT_FALSE(e) << e->message;
    EXPECT_EQ(r.constraint.kind, ConstraintSpec::Kind::kJsonSchema);
    EXPECT_TRUE(r.constraint.strict) << "no undeclared properties, as Anthropic's outputs";
    EXPECT_EQ(r.constraint.schema, OJson::parse(schema));
  }
  for (const auto& [field, param] : std::vector<std::pair<std::string, std::string>>{
           {R"("output_config": {"format": {"type": "text"}})", "output_config.format.type"},
           {R"("output_config": {"format": {"type": "json_schema"}})", "output_config.format.schema"},
           {R"("output_format": {"type": "json_schema", "schema": )" + schema +
                R"(}, "output_config": {"format": {"type": "json_schema", "schema": {}}})",
            "output_format"}}) {
    InferenceRequest r;
    MaybeError e = ParseMessagesRequest(OJson::parse(head + ", " + field + "}"), false, &r);
    ASSERT_TRUE(e) << field;
    EXPECT_EQ(e->param, param) << e->message;
  }
  InferenceRequest t;
  ASSERT_FALSE(ParseMessagesRequest(
      OJson::parse(head + R"(, "tools": [{"name": "f", "strict": true, "input_schema": {"type": "object"}}]})"), false,
      &t));
  EXPECT_EQ(t.tools[0]["function"]["strict"], true);
}

TEST(AnthropicMessages, ClaudeCodeCaptures) {
  SKIP_IF_NO_SHARED();
  const std::string dir = testing::SharedDir() + "/clients/claude-code-2.1.197";
  for (const char* name : {"01-plain.json", "02-tool-roundtrip-request-1.json", "03-tool-roundtrip-request-2.json"}) {
    auto text = ReadFileToString(dir + "/" + name);
    ASSERT_TRUE(text.ok()) << name;
    OJson capture = OJson::parse(*text);
    const std::string body = capture["body"].is_string() ? capture["body"].get<std::string>() : capture["body"].dump();
    OJson parsed;
    ASSERT_FALSE(ParseJsonObject(body, &parsed)) << name;
    InferenceRequest r;
    MaybeError e = ParseMessagesRequest(parsed, false, &r);
    ASSERT_FALSE(e) << name << ": " << e->message;
    EXPECT_TRUE(r.stream);
    EXPECT_EQ(r.tools.size(), capture["body"]["tools"].size()) << name;
    ASSERT_GE(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0]["role"], "system");
    EXPECT_EQ(r.messages[0]["content"].get<std::string>().find("x-anthropic-billing-header"), std::string::npos);
    bool mid_system = false;
    for (size_t i = 1; i < r.messages.size(); ++i) mid_system |= r.messages[i]["role"] == "system";
    EXPECT_TRUE(mid_system) << name;
  }
}

}  // namespace
}  // namespace llmhost::server::request_parse_test
