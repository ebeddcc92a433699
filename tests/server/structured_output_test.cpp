// Structured output fields → ConstraintSpec: every field OpenAI, vLLM and
// llama.cpp clients send, the Responses API's text.format, conflicts between
// them, and bad shapes as 400s naming the field; forced tool choices are
// accepted now (they are compiled when the model is known).
#include <gtest/gtest.h>

#include <string>

#include "server/anthropic_request.h"
#include "server/json_fields.h"
#include "server/openai_request.h"
#include "server/response_store.h"
#include "server/responses_request.h"
#include "server/structured_output_request.h"

namespace llmhost::server::structured_output_test {
namespace {

using Kind = ConstraintSpec::Kind;

const char* kHead = R"("model": "m", "messages": [{"role": "user", "content": "x"}])";

MaybeError Chat(const std::string& fields, InferenceRequest* r) {
  return ParseChatCompletionsRequest(OJson::parse("{" + std::string(kHead) + ", " + fields + "}"), r);
}

ConstraintSpec MustChat(const std::string& fields) {
  InferenceRequest r;
  MaybeError e = Chat(fields, &r);
  EXPECT_FALSE(e) << fields << ": " << e->message;
  return r.constraint;
}

ApiError ChatError(const std::string& fields) {
  InferenceRequest r;
  MaybeError e = Chat(fields, &r);
  EXPECT_TRUE(e) << fields;
  return e.value_or(ApiError{});
}

TEST(StructuredOutputRequest, ResponseFormat) {
  EXPECT_EQ(MustChat(R"("response_format": {"type": "text"})").kind, Kind::kNone);
  ConstraintSpec obj = MustChat(R"("response_format": {"type": "json_object"})");
  EXPECT_EQ(obj.kind, Kind::kJsonObject);
  EXPECT_EQ(obj.field, "response_format");
  ConstraintSpec s = MustChat(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "p", "strict": true,
          "schema": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}}})");
  EXPECT_EQ(s.kind, Kind::kJsonSchema);
  EXPECT_TRUE(s.strict);
  // Property order as sent (the grammar writes them in the schema's order).
  EXPECT_EQ(s.schema["properties"].begin().key(), "b");
  EXPECT_FALSE(MustChat(R"("response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {}}})").strict);
  // llama.cpp's shapes: the schema beside the type.
  ConstraintSpec l = MustChat(R"("response_format": {"type": "json_object", "schema": {"type": "array"}})");
  EXPECT_EQ(l.kind, Kind::kJsonSchema);
  EXPECT_EQ(l.schema["type"], "array");
  EXPECT_EQ(MustChat(R"("response_format": {"type": "json_schema", "schema": {"type": "string"}})").schema["type"],
            "string");
}

TEST(StructuredOutputRequest, VllmAndLlamaCppFields) {
  ConstraintSpec j = MustChat(R"("guided_json": {"type": "object"})");
  EXPECT_EQ(j.kind, Kind::kJsonSchema);
  EXPECT_EQ(j.field, "guided_json");
  // vLLM also takes the schema as JSON text.
  EXPECT_EQ(MustChat(R"("guided_json": "{\"type\": \"integer\"}")").schema["type"], "integer");
  ConstraintSpec re = MustChat(R"("guided_regex": "[0-9]{3}")");
  EXPECT_EQ(re.kind, Kind::kRegex);
  EXPECT_EQ(re.text, "[0-9]{3}");
  ConstraintSpec ch = MustChat(R"("guided_choice": ["yes", "no"])");
  EXPECT_EQ(ch.kind, Kind::kChoice);
  EXPECT_EQ(ch.choices, (std::vector<std::string>{"yes", "no"}));
  EXPECT_EQ(MustChat(R"("guided_grammar": "root ::= \"a\"")").kind, Kind::kGrammar);
  ConstraintSpec g = MustChat(R"("grammar": "root ::= [0-9]+")");
  EXPECT_EQ(g.kind, Kind::kGrammar);
  EXPECT_EQ(g.field, "grammar");
  ConstraintSpec js = MustChat(R"("json_schema": {"type": "boolean"})");
  EXPECT_EQ(js.kind, Kind::kJsonSchema);
  EXPECT_EQ(js.field, "json_schema");
  // structured_outputs: one key of json / regex / choice / grammar / json_object.
  EXPECT_EQ(MustChat(R"("structured_outputs": {"json": {"type": "object"}})").field, "structured_outputs.json");
  EXPECT_EQ(MustChat(R"("structured_outputs": {"regex": "a+"})").kind, Kind::kRegex);
  EXPECT_EQ(MustChat(R"("structured_outputs": {"choice": ["x"]})").kind, Kind::kChoice);
  EXPECT_EQ(MustChat(R"("structured_outputs": {"grammar": "root ::= \"a\""})").kind, Kind::kGrammar);
  EXPECT_EQ(MustChat(R"("structured_outputs": {"json_object": true})").kind, Kind::kJsonObject);
  EXPECT_EQ(MustChat(R"("structured_outputs": {"json_object": false})").kind, Kind::kNone);
  EXPECT_EQ(MustChat(R"("guided_json": null, "grammar": null)").kind, Kind::kNone);
}

TEST(StructuredOutputRequest, TwoConstraintsAreA400NamingBoth) {
  for (const char* fields : {R"("response_format": {"type": "json_object"}, "guided_regex": "a")",
                             R"("guided_json": {}, "guided_choice": ["a"])",
                             R"("grammar": "root ::= \"a\"", "json_schema": {})",
                             R"("structured_outputs": {"regex": "a", "choice": ["a"]})",
                             R"("structured_outputs": {"json": {}}, "guided_grammar": "root ::= \"a\"")"}) {
    ApiError e = ChatError(fields);
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(e.message.find("cannot be used together"), std::string::npos) << e.message;
    // Both names appear.
    const OJson body = OJson::parse("{" + std::string(fields) + "}");
    size_t named = 0;
    for (auto it = body.begin(); it != body.end(); ++it) named += e.message.find(it.key()) != std::string::npos;
    if (body.size() == 2) EXPECT_EQ(named, 2u) << e.message;
  }
  // response_format text constrains nothing: no conflict.
  EXPECT_EQ(MustChat(R"("response_format": {"type": "text"}, "guided_regex": "a")").kind, Kind::kRegex);
}

TEST(StructuredOutputRequest, BadShapesName400Fields) {
  struct Case {
    const char* fields;
    const char* param;
  } cases[] = {
      {R"("response_format": {"type": "xml"})", "response_format.type"},
      {R"("response_format": "json")", "response_format"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}})", "response_format.json_schema.schema"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": 3}})",
       "response_format.json_schema.schema"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": "yes", "schema": {}}})",
       "response_format.json_schema.strict"},
      {R"("guided_json": "{not json")", "guided_json"},
      {R"("guided_json": [1])", "guided_json"},
      {R"("guided_regex": 5)", "guided_regex"},
      {R"("guided_regex": "")", "guided_regex"},
      {R"("guided_choice": [])", "guided_choice"},
      {R"("guided_choice": ["a", 1])", "guided_choice[1]"},
      {R"("guided_choice": "a")", "guided_choice"},
      {R"("grammar": ["root"])", "grammar"},
      {R"("structured_outputs": {"structural_tag": "x"})", "structured_outputs.structural_tag"},
      {R"("structured_outputs": [1])", "structured_outputs"},
  };
  for (const Case& c : cases) {
    ApiError e = ChatError(c.fields);
    EXPECT_EQ(e.status, 400) << c.fields;
    EXPECT_EQ(e.param, c.param) << c.fields << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
  std::string many = R"("guided_choice": [)";
  for (size_t i = 0; i <= kMaxGuidedChoices; ++i) many += (i ? ",\"" : "\"") + std::to_string(i) + "\"";
  EXPECT_EQ(ChatError(many + "]").param, "guided_choice");
}

TEST(StructuredOutputRequest, CompletionsTakeTheSameFields) {
  InferenceRequest r;
  ASSERT_FALSE(ParseCompletionsRequest(OJson::parse(R"({"model": "m", "prompt": "x", "guided_choice": ["a", "b"]})"), &r));
  EXPECT_EQ(r.constraint.kind, Kind::kChoice);
  InferenceRequest r2;
  MaybeError e = ParseCompletionsRequest(
      OJson::parse(R"({"model": "m", "prompt": "x", "guided_regex": "a", "grammar": "root ::= \"a\""})"), &r2);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "grammar");
}

TEST(StructuredOutputRequest, ResponsesTextFormat) {
  ResponseStore store;
  auto parse = [&](const std::string& text, InferenceRequest* r) {
    return ParseResponsesRequest(OJson::parse(R"({"model": "m", "input": "x", "text": )" + text + "}"), store, r);
  };
  InferenceRequest r;
  ASSERT_FALSE(parse(R"({"format": {"type": "json_schema", "name": "p", "strict": true, "schema": {"type": "object"}}})", &r));
  EXPECT_EQ(r.constraint.kind, Kind::kJsonSchema);
  EXPECT_TRUE(r.constraint.strict);
  EXPECT_EQ(r.constraint.field, "text.format");
  EXPECT_EQ(r.responses_echo["text"]["format"]["type"], "json_schema") << "the response echoes the format";
  InferenceRequest o;
  ASSERT_FALSE(parse(R"({"format": {"type": "json_object"}})", &o));
  EXPECT_EQ(o.constraint.kind, Kind::kJsonObject);
  InferenceRequest t;
  ASSERT_FALSE(parse(R"({"format": {"type": "text"}})", &t));
  EXPECT_EQ(t.constraint.kind, Kind::kNone);
  InferenceRequest bad;
  MaybeError e = parse(R"({"format": {"type": "json_schema", "name": "p"}})", &bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "text.format.schema");
  e = parse(R"({"format": {"type": "yaml"}})", &bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "text.format.type");
}

TEST(StructuredOutputRequest, ForcedToolChoicesAreAccepted) {
  const std::string tools =
      R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
                   {"type": "function", "function": {"name": "g", "strict": true}}])";
  InferenceRequest req;
  ASSERT_FALSE(Chat(tools + R"(, "tool_choice": "required")", &req));
  EXPECT_EQ(req.tool_choice.mode, ToolChoice::kRequired);
  EXPECT_EQ(req.tools.size(), 2u);
  InferenceRequest named;
  ASSERT_FALSE(Chat(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}})", &named));
  EXPECT_EQ(named.tool_choice.mode, ToolChoice::kRequired);
  ASSERT_EQ(named.tools.size(), 1u) << "a named function: only it is shown and allowed";
  EXPECT_EQ(named.tools[0]["function"]["name"], "g");
  EXPECT_EQ(ChatError(R"("tool_choice": "required")").param, "tool_choice") << "required without tools";

  const std::string anthropic_tools = R"("tools": [{"name": "a", "input_schema": {"type": "object"}},
                                                   {"name": "b", "input_schema": {"type": "object"}}])";
  for (const char* choice : {R"({"type": "any"})", R"({"type": "tool", "name": "b"})"}) {
    InferenceRequest r;
    MaybeError e = ParseMessagesRequest(
        OJson::parse(R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], )" +
                     anthropic_tools + R"(, "tool_choice": )" + choice + "}"),
        false, &r);
    ASSERT_FALSE(e) << choice << ": " << e->message;
    EXPECT_EQ(r.tool_choice.mode, ToolChoice::kRequired);
  }

  ResponseStore store;
  InferenceRequest resp;
  ASSERT_FALSE(ParseResponsesRequest(
      OJson::parse(R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": {}},
                       {"type": "function", "name": "h"}], "tool_choice": {"type": "function", "name": "h"}})"),
      store, &resp));
  EXPECT_EQ(resp.tool_choice.mode, ToolChoice::kRequired);
  ASSERT_EQ(resp.tools.size(), 1u);
  EXPECT_EQ(resp.tools[0]["function"]["name"], "h");
  MaybeError e = ParseResponsesRequest(
      OJson::parse(R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f"}],
                       "tool_choice": {"type": "function", "name": "zz"}})"),
      store, &resp);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "tool_choice.name");
}

}  // namespace
}  // namespace llmhost::server::structured_output_test
