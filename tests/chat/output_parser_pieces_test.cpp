// The output parser's building blocks: finding where JSON ends in text still
// being generated, Python call lists, and schema-typed parameter values.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/json_scan.h"
#include "chat/python_literal.h"
#include "chat/tool_args.h"

namespace llmhost::output_parser_pieces_test {
namespace {

using json_scan::State;

TEST(JsonScan, FindsTheEndOfAValue) {
  auto span = json_scan::ScanValue(R"({"a": "}", "b": [1, {"c": "\"]"}]} tail)", 0);
  EXPECT_EQ(span.state, State::kComplete);
  EXPECT_EQ(span.end, 34u);
  EXPECT_EQ(json_scan::ScanValue(R"({"a": [1, 2)", 0).state, State::kIncomplete);
  EXPECT_EQ(json_scan::ScanValue(R"({"a": [1, 2})", 0).state, State::kError);
  EXPECT_EQ(json_scan::ScanValue("123", 0).state, State::kIncomplete);  // "1234" may follow
  EXPECT_EQ(json_scan::ScanValue("123,", 0).end, 3u);
  EXPECT_EQ(json_scan::ScanValue(std::string(300, '['), 0).state, State::kError);  // too deep
}

TEST(JsonScan, ValidJsonIncludesNumbersPastTheDoubleRange) {
  EXPECT_TRUE(json_scan::IsValidJson(R"({"a": [1e400, -0.5E-9, 0, 123456789012345678901234567890]})"));
  EXPECT_TRUE(json_scan::IsValidJson(" \"1e400\" "));
  for (const char* bad : {"01", "-", "1.", ".5", "1e", "1e+", "+1", "1x", "[1,]", "{\"a\" 1}", "\"\\q\"", "NaN"}) {
    EXPECT_FALSE(json_scan::IsValidJson(bad)) << bad;
  }
}

TEST(JsonScan, CallObjectStreamsArgumentsOnceTheNameIsKnown) {
  auto partial = json_scan::ScanCallObject(R"({"name": "f", "arguments": {"a": [1,)", 0, {"name"}, {"arguments"});
  EXPECT_EQ(partial.state, State::kIncomplete);
  EXPECT_EQ(partial.name, "f");
  EXPECT_EQ(partial.arguments, R"({"a": [1,)");
  auto done = json_scan::ScanCallObject(R"({"name": "f", "arguments": "{\"a\": 1}"})", 0, {"name"}, {"arguments"});
  EXPECT_EQ(done.state, State::kComplete);
  EXPECT_EQ(done.arguments, R"({"a": 1})");  // a string holding an object is unwrapped
  EXPECT_EQ(json_scan::ScanCallObject(R"({"name": 3, "arguments": {}})", 0, {"name"}, {"arguments"}).state,
            State::kError);
  EXPECT_EQ(json_scan::ScanCallObject(R"({"arguments": {}})", 0, {"name"}, {"arguments"}).state, State::kError);
  EXPECT_EQ(json_scan::QuoteJson("a\"b\\\n\x01\xC3\xA9"), "\"a\\\"b\\\\\\n\\u0001\xC3\xA9\"");
}

TEST(PythonLiteral, CallsToJson) {
  auto calls = ParsePythonCalls("[a.b(x=1e3, y=\"s\", z=[], w={}), c( )]");
  ASSERT_TRUE(calls.has_value());
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0].name, "a.b");
  EXPECT_EQ((*calls)[0].arguments, R"({"x":1000.0,"y":"s","z":[],"w":{}})");
  EXPECT_EQ((*calls)[1].arguments, "{}");
  EXPECT_FALSE(ParsePythonCalls("[f(1)]").has_value());  // positional arguments have no names
  EXPECT_FALSE(ParsePythonCalls("[f(a=x)]").has_value());
  EXPECT_FALSE(ParsePythonCalls("[f(a=1)] more").has_value());
  EXPECT_FALSE(ParsePythonCalls("[f(a='unterminated)]").has_value());
  EXPECT_EQ(ScanPythonBrackets("[f(a=']')] x", 0).end, 10u);
}

TEST(ToolArgs, ValuesTypedBySchema) {
  ToolSchemas schemas(nlohmann::json::parse(R"([
    {"type": "function", "function": {"name": "f", "parameters": {"properties": {
      "n": {"type": "integer"}, "s": {"type": "string"}, "b": {"type": "boolean"}, "o": {"type": "object"}}}}},
    {"name": "g", "input_schema": {"properties": {"x": {"type": "number"}}}}])"));
  EXPECT_EQ(schemas.TypeOf("f", "n"), "integer");
  EXPECT_EQ(schemas.TypeOf("g", "x"), "number");
  EXPECT_EQ(schemas.TypeOf("f", "missing"), "");
  // One type through anyOf with null (pydantic's Optional) and local refs.
  const nlohmann::json root = nlohmann::json::parse(R"({"$defs": {"N": {"type": "integer"}, "S": {"type": "string"}}})");
  EXPECT_EQ(ParameterType(nlohmann::json::parse(R"({"anyOf": [{"type": "number"}, {"type": "null"}]})"), root), "number");
  EXPECT_EQ(ParameterType(nlohmann::json::parse(R"({"$ref": "#/$defs/N"})"), root), "integer");
  EXPECT_EQ(ParameterType(nlohmann::json::parse(R"({"oneOf": [{"$ref": "#/$defs/N"}, {"$ref": "#/$defs/S"}]})"), root), "");
  EXPECT_EQ(ParameterType(nlohmann::json::parse(R"({"$ref": "#/$defs/missing"})"), root), "");
  EXPECT_EQ(ParameterType(nlohmann::json::parse(R"({"$ref": "#/$defs/~9"})"), root), "");
  EXPECT_EQ(TypedArgumentJson(" 42 ", "integer"), "42");
  EXPECT_EQ(TypedArgumentJson("4.5", "integer"), "\"4.5\"");
  EXPECT_EQ(TypedArgumentJson("True", "boolean"), "true");
  EXPECT_EQ(TypedArgumentJson("{\"k\": 1}", "object"), "{\"k\":1}");
  EXPECT_EQ(TypedArgumentJson("42", "string"), "\"42\"");
  EXPECT_EQ(TypedArgumentJson("42", ""), "\"42\"");
  // Valid JSON past the double range passes as written, in its own kind only.
  EXPECT_EQ(TypedArgumentJson(" 1e400 ", "number"), "1e400");
  EXPECT_EQ(TypedArgumentJson("[1e400]", "array"), "[1e400]");
  EXPECT_EQ(TypedArgumentJson("1e400", "integer"), "\"1e400\"");
  EXPECT_EQ(TypedArgumentJson("1e400", "object"), "\"1e400\"");
  ArgumentsBuilder args;
  EXPECT_EQ(args.Finished(), "{}");
  EXPECT_EQ(args.Partial("a", "x\"y"), "{\"a\": \"x\\\"y");
  args.Add("a", "1");
  EXPECT_EQ(args.Finished(), "{\"a\": 1}");
}

}  // namespace
}  // namespace llmhost::output_parser_pieces_test
