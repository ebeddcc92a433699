// Forced tool calls (chat/tool_call_grammar.h): for every format with a
// grammar, the markup the grammar accepts is exactly what the output parser
// reads as that call; other tools' names, arguments outside the schema and
// text around the call are refused; markers that are special tokens must come
// as those tokens; only "no format" lacks a grammar.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chat/output_parser.h"
#include "chat/tool_call_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace llmhost::tool_call_grammar_test {
namespace {

using nlohmann::ordered_json;
using VocabPtr = std::shared_ptr<const grammar::TokenVocab>;

// Every byte a token of its own; `special` texts as special tokens after them.
VocabPtr ByteVocab(const std::vector<std::string>& special = {}) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  std::vector<TokenId> ids;
  for (const std::string& s : special) {
    ids.push_back(static_cast<TokenId>(tokens.size()));
    tokens.push_back(s);
  }
  return grammar::TokenVocab::FromBytes(tokens, ids, {});
}

const ordered_json& Tools() {
  static const ordered_json tools = ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "strict": true, "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"]}}},
    {"type": "function", "function": {"name": "get_time"}}])");
  return tools;
}

// The tool-call grammar of `tools` in format f, compiled against `v`.
std::shared_ptr<const grammar::CompiledGrammar> CompiledFor(OutputFormat f, const ordered_json& tools,
                                                            const ToolCallGrammarOptions& o = {},
                                                            const VocabPtr& v = ByteVocab()) {
  grammar::Grammar g;
  Result<grammar::RuleId> root = AddToolCallGrammar(g, f, tools, *v, o);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  if (!root.ok()) return nullptr;
  g.SetRoot(*root);
  auto c = grammar::Compile(g, v);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

std::shared_ptr<const grammar::CompiledGrammar> Compiled(OutputFormat f, const VocabPtr& v, bool parallel = true) {
  ToolCallGrammarOptions o;
  o.parallel = parallel;
  return CompiledFor(f, Tools(), o, v);
}

// The grammar takes `text` whole and may end there.
bool Accepts(const std::shared_ptr<const grammar::CompiledGrammar>& g, const std::string& text) {
  grammar::Matcher m(g);
  return m.AcceptBytes(text) && m.CanEnd();
}

struct Case {
  OutputFormat format;
  std::string call;  // a get_weather call in the format's markup, as the grammar writes it
  std::string two;   // two calls
};

std::vector<Case> Cases() {
  const std::string args = R"({"city": "Paris", "unit": "c"})";
  const std::string hermes = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + args + "}\n</tool_call>";
  const std::string hermes_time = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  const std::string llama = "{\"name\": \"get_weather\", \"parameters\": " + args + "}";
  const std::string mistral_call = "{\"name\": \"get_weather\", \"arguments\": " + args + "}";
  const std::string ds_call = "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" + args + "<｜tool▁call▁end｜>";
  const std::string ds_time = "<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>";
  const std::string r1_call =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" + args + "\n```<｜tool▁call▁end｜>";
  const std::string r1_time = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜>";
  const std::string qwen =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=unit>\nc\n"
      "</parameter>\n</function>\n</tool_call>";
  const std::string qwen_time = "<tool_call>\n<function=get_time>\n</function>\n</tool_call>";
  const std::string glm47 =
      "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
      "<arg_key>unit</arg_key><arg_value>c</arg_value></tool_call>";
  const std::string glm45 =
      "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
      "<arg_key>unit</arg_key>\n<arg_value>c</arg_value>\n</tool_call>";
  const std::string harmony =
      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" + args + "<|call|>";
  return {
      {OutputFormat::kHermes, hermes, hermes + "\n" + hermes_time},
      {OutputFormat::kLlama3Json, llama, llama + "; {\"name\": \"get_time\", \"parameters\": {}}"},
      {OutputFormat::kMistral, "[TOOL_CALLS][" + mistral_call + "]",
       "[TOOL_CALLS][" + mistral_call + ", {\"name\": \"get_time\", \"arguments\": {}}]"},
      {OutputFormat::kDeepSeekV31, "<｜tool▁calls▁begin｜>" + ds_call + "<｜tool▁calls▁end｜>",
       "<｜tool▁calls▁begin｜>" + ds_call + ds_time + "<｜tool▁calls▁end｜>"},
      {OutputFormat::kDeepSeekV3, "<｜tool▁calls▁begin｜>" + r1_call + "<｜tool▁calls▁end｜>",
       "<｜tool▁calls▁begin｜>" + r1_call + "\n" + r1_time + "<｜tool▁calls▁end｜>"},
      {OutputFormat::kKimiK2,
       "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>" + args +
           "<|tool_call_end|><|tool_calls_section_end|>",
       ""},
      {OutputFormat::kQwen3Coder, qwen, qwen + "\n" + qwen_time},
      {OutputFormat::kGlm45, glm47, glm47 + "<tool_call>get_time</tool_call>"},
      {OutputFormat::kGlm45, glm45, glm45 + "\n<tool_call>get_time\n</tool_call>"},
      {OutputFormat::kPythonic, "[get_weather(city=\"Paris\", unit=\"c\")]",
       "[get_weather(city=\"Paris\", unit=\"c\"), get_time()]"},
      {OutputFormat::kHarmony, harmony, ""},
  };
}

TEST(ToolCallGrammar, AcceptedMarkupParsesAsTheCall) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(OutputFormatName(c.format));
    auto g = Compiled(c.format, ByteVocab());
    ASSERT_TRUE(g);
    EXPECT_TRUE(Accepts(g, c.call)) << c.call;
    ParseOptions po;
    po.tools = nlohmann::json::parse(Tools().dump());
    po.reasoning = false;
    ParsedOutput out = ParseOutput(c.format, po, c.call);
    ASSERT_EQ(out.tool_calls.size(), 1u) << c.call;
    EXPECT_EQ(out.tool_calls[0].name, "get_weather");
    EXPECT_EQ(nlohmann::json::parse(out.tool_calls[0].arguments), nlohmann::json::parse(R"({"city": "Paris", "unit": "c"})"));
    EXPECT_EQ(out.content, "");
    if (!c.two.empty()) {
      EXPECT_TRUE(Accepts(g, c.two)) << c.two;
      EXPECT_EQ(ParseOutput(c.format, po, c.two).tool_calls.size(), 2u);
      EXPECT_FALSE(Accepts(Compiled(c.format, ByteVocab(), /*parallel=*/false), c.two)) << "one call when not parallel";
    }
  }
}

TEST(ToolCallGrammar, RefusesOtherNamesArgumentsAndText) {
  auto g = Compiled(OutputFormat::kHermes, ByteVocab());
  ASSERT_TRUE(g);
  const std::string head = "<tool_call>\n{\"name\": ";
  EXPECT_FALSE(Accepts(g, head + "\"get_wind\", \"arguments\": {}}\n</tool_call>"));
  // strict: no property beyond the schema's; "unit" is an enum; both required.
  EXPECT_FALSE(Accepts(g, head + "\"get_weather\", \"arguments\": {\"city\": \"P\", \"unit\": \"c\", \"x\": 1}}\n</tool_call>"));
  EXPECT_FALSE(Accepts(g, head + "\"get_weather\", \"arguments\": {\"city\": \"P\", \"unit\": \"k\"}}\n</tool_call>"));
  EXPECT_FALSE(Accepts(g, head + "\"get_weather\", \"arguments\": {\"city\": \"P\"}}\n</tool_call>"));
  grammar::Matcher m(g);
  EXPECT_FALSE(m.AcceptBytes("Sure! <tool_call>")) << "no text before the call";
  EXPECT_FALSE(Accepts(g, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call> done"));
}

TEST(ToolCallGrammar, SpecialMarkersComeAsTheirTokens) {
  VocabPtr v = ByteVocab({"<tool_call>", "</tool_call>"});
  auto g = Compiled(OutputFormat::kHermes, v);
  ASSERT_TRUE(g);
  grammar::Matcher bytes(g);
  EXPECT_FALSE(bytes.AcceptBytes("<tool_call>")) << "the marker's text is not the marker";
  grammar::Matcher m(g);
  ASSERT_TRUE(m.AcceptToken(v->SpecialId("<tool_call>")).ok());
  ASSERT_TRUE(m.AcceptBytes("\n{\"name\": \"get_time\", \"arguments\": {}}\n"));
  ASSERT_TRUE(m.AcceptToken(v->SpecialId("</tool_call>")).ok());
  EXPECT_TRUE(m.CanEnd());
}

TEST(ToolCallGrammar, EveryToolCallFormatHasAGrammar) {
  for (OutputFormat f : {OutputFormat::kHermes, OutputFormat::kQwen3Coder, OutputFormat::kLlama3Json,
                         OutputFormat::kMistral, OutputFormat::kPythonic, OutputFormat::kDeepSeekV3,
                         OutputFormat::kDeepSeekV31, OutputFormat::kKimiK2, OutputFormat::kGlm45,
                         OutputFormat::kHarmony}) {
    EXPECT_TRUE(HasToolCallGrammar(f)) << OutputFormatName(f);
  }
  EXPECT_FALSE(HasToolCallGrammar(OutputFormat::kNone));
  grammar::Grammar g;
  Result<grammar::RuleId> r = AddToolCallGrammar(g, OutputFormat::kNone, Tools(), *ByteVocab());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("none"), std::string::npos) << r.status().message();
}

TEST(ToolCallGrammar, AToolSchemaThatCannotBeEnforcedNamesTheTool) {
  const ordered_json tools = ordered_json::parse(R"j([{"type": "function", "function": {"name": "f"}},
    {"type": "function", "function": {"name": "g", "parameters": {"type": "object",
      "properties": {"a": {"type": "string", "pattern": "(?=x)"}}}}}])j");
  grammar::Grammar g;
  Result<grammar::RuleId> r = AddToolCallGrammar(g, OutputFormat::kHermes, tools, *ByteVocab());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tools[1].function.parameters"), std::string::npos) << r.status().message();
}

ParsedOutput Parse(OutputFormat f, const ordered_json& tools, const std::string& text, bool reasoning = false) {
  ParseOptions po;
  po.tools = nlohmann::json::parse(tools.dump());
  po.reasoning = reasoning;
  return ParseOutput(f, po, text);
}

const ordered_json& WriteTool() {
  static const ordered_json tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "write",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "count": {"type": "integer"},
      "body": {"type": "string"}}, "required": ["path", "body"]}}}])");
  return tools;
}

TEST(ToolCallGrammar, BareTextNeverHoldsTheClosingTag) {
  auto qwen = CompiledFor(OutputFormat::kQwen3Coder, WriteTool());
  auto glm = CompiledFor(OutputFormat::kGlm45, WriteTool());
  ASSERT_TRUE(qwen && glm);
  for (const std::string& body : {std::string("<div>a < b</div>"), std::string("x</paramete"),
                                 std::string("</arg_valu"), std::string("\nline\n"), std::string("")}) {
    SCOPED_TRACE(body);
    const std::string q = "<tool_call>\n<function=write>\n<parameter=path>\na.txt\n</parameter>\n<parameter=body>\n" +
                          body + "\n</parameter>\n</function>\n</tool_call>";
    ASSERT_TRUE(Accepts(qwen, q));
    ParsedOutput out = Parse(OutputFormat::kQwen3Coder, WriteTool(), q);
    ASSERT_EQ(out.tool_calls.size(), 1u);
    EXPECT_EQ(nlohmann::json::parse(out.tool_calls[0].arguments), (nlohmann::json{{"path", "a.txt"}, {"body", body}}));
    const std::string gl =
        "<tool_call>write<arg_key>path</arg_key><arg_value>a.txt</arg_value><arg_key>body</arg_key><arg_value>" + body +
        "</arg_value></tool_call>";
    ASSERT_TRUE(Accepts(glm, gl));
    out = Parse(OutputFormat::kGlm45, WriteTool(), gl);
    ASSERT_EQ(out.tool_calls.size(), 1u);
    EXPECT_EQ(nlohmann::json::parse(out.tool_calls[0].arguments), (nlohmann::json{{"path", "a.txt"}, {"body", body}}));
  }
  grammar::Matcher q(qwen);
  ASSERT_TRUE(q.AcceptBytes("<tool_call>\n<function=write>\n<parameter=path>\na"));
  EXPECT_FALSE(q.AcceptBytes("</parameter>")) << "the tag ends a value only after its newline";
  grammar::Matcher gm(glm);
  ASSERT_TRUE(gm.AcceptBytes("<tool_call>write<arg_key>path</arg_key><arg_value>a"));
  EXPECT_TRUE(gm.AcceptBytes("</arg_value>"));
  EXPECT_FALSE(gm.AcceptBytes("x")) << "after the closing tag the value is over";
}

TEST(ToolCallGrammar, TypedParametersAreJsonAndOptionalOnesMayBeLeftOut) {
  auto qwen = CompiledFor(OutputFormat::kQwen3Coder, WriteTool());
  ASSERT_TRUE(qwen);
  const std::string head = "<tool_call>\n<function=write>\n<parameter=path>\na\n</parameter>\n";
  const std::string body = "<parameter=body>\nb\n</parameter>\n";
  const std::string end = "</function>\n</tool_call>";
  const std::string with_count = head + "<parameter=count>\n-7\n</parameter>\n" + body + end;
  ASSERT_TRUE(Accepts(qwen, with_count));
  EXPECT_EQ(nlohmann::json::parse(Parse(OutputFormat::kQwen3Coder, WriteTool(), with_count).tool_calls.at(0).arguments),
            (nlohmann::json{{"path", "a"}, {"count", -7}, {"body", "b"}}));
  EXPECT_TRUE(Accepts(qwen, head + body + end)) << "count is optional";
  EXPECT_FALSE(Accepts(qwen, head + "<parameter=count>\nseven\n</parameter>\n" + body + end));
  EXPECT_FALSE(Accepts(qwen, head + "<parameter=count>\n1.5\n</parameter>\n" + body + end));
  EXPECT_FALSE(Accepts(qwen, head + end)) << "body is required";
  EXPECT_FALSE(Accepts(qwen, "<tool_call>\n<function=write>\n" + body + end)) << "path is required";
  EXPECT_FALSE(Accepts(qwen, head + body + "<parameter=mode>\nx\n</parameter>\n" + end))
      << "no parameter outside the schema";
}

TEST(ToolCallGrammar, HarmonyMayReasonBeforeTheCall) {
  ToolCallGrammarOptions o;
  o.analysis_first = true;
  auto reasoning = CompiledFor(OutputFormat::kHarmony, Tools(), o);
  auto direct = CompiledFor(OutputFormat::kHarmony, Tools());
  ASSERT_TRUE(reasoning && direct);
  const std::string call = "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|>";
  const std::string analysis = "<|channel|>analysis<|message|>The user wants the time, a < b.<|end|><|start|>assistant";
  EXPECT_TRUE(Accepts(reasoning, analysis + call));
  EXPECT_TRUE(Accepts(reasoning, call));
  EXPECT_FALSE(Accepts(direct, analysis + call)) << "no analysis where the request does not reason";
  EXPECT_FALSE(Accepts(reasoning, "<|channel|>analysis<|message|>a <|b<|end|><|start|>assistant" + call))
      << "no marker spelled in plain text";
  ParsedOutput out = Parse(OutputFormat::kHarmony, Tools(), analysis + call, /*reasoning=*/true);
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "get_time");
  EXPECT_EQ(out.reasoning_content, "The user wants the time, a < b.");
}

TEST(ToolCallGrammar, PythonicStringsReadBackExactly) {
  auto g = CompiledFor(OutputFormat::kPythonic, WriteTool());
  ASSERT_TRUE(g);
  const std::string call = R"([write(path="a\"b\\c", body="\b\f\n\t\u00e9\ud83d\ude00 \/")])";
  ASSERT_TRUE(Accepts(g, call));
  ParsedOutput out = Parse(OutputFormat::kPythonic, WriteTool(), call);
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(out.tool_calls[0].arguments),
            (nlohmann::json{{"path", "a\"b\\c"}, {"body", "\b\f\n\t\u00e9\U0001F600 /"}}));
  EXPECT_FALSE(Accepts(g, "[write(body=\"x\", path=\"a\")]")) << "parameters in the schema's order";
  EXPECT_FALSE(Accepts(g, "[write(path='a', body='b')]")) << "strings as the grammar writes them";
}

TEST(ToolCallGrammar, NamedParameterSchemasTheFormatsCannotCarryAreNamed) {
  const ordered_json counted = ordered_json::parse(R"([{"type": "function", "function": {"name": "f",
    "parameters": {"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1}}}])");
  const ordered_json untyped = ordered_json::parse(R"([{"type": "function", "function": {"name": "f",
    "parameters": {"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}}}}}])");
  for (OutputFormat f : {OutputFormat::kQwen3Coder, OutputFormat::kGlm45, OutputFormat::kPythonic}) {
    SCOPED_TRACE(OutputFormatName(f));
    grammar::Grammar g;
    Result<grammar::RuleId> r = AddToolCallGrammar(g, f, counted, *ByteVocab());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("tools[0].function.parameters"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("minProperties"), std::string::npos) << r.status().message();
  }
  // The XML readers take a parameter without one type as text: a schema
  // without a string is refused there; pythonic writes it as JSON.
  grammar::Grammar g;
  Result<grammar::RuleId> r = AddToolCallGrammar(g, OutputFormat::kQwen3Coder, untyped, *ByteVocab());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/properties/a"), std::string::npos) << r.status().message();
  EXPECT_TRUE(CompiledFor(OutputFormat::kPythonic, untyped));
}

// Random calls drawn from each format's grammar parse back to arguments the
// tool's schema accepts (checked by the JSON Schema grammar of the
// parameters, strict), for a schema with every kind of parameter.
TEST(ToolCallGrammar, GeneratedCallsParseToSchemaValidArguments) {
  const ordered_json tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "edit", "strict": true,
    "parameters": {"type": "object", "properties": {
      "path": {"type": "string", "maxLength": 12},
      "mode": {"enum": ["a", "b<c"]},
      "count": {"type": "integer", "minimum": 0, "maximum": 99},
      "ratio": {"type": ["number", "null"], "minimum": -1e6, "maximum": 1e6},
      "flag": {"type": "boolean"},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
      "note": {"anyOf": [{"type": "string", "pattern": "^x+$"}, {"type": "null"}]},
      "body": {"type": "string"}},
    "required": ["path", "count", "body"], "additionalProperties": false}}}])");
  // Bytes, and markup as tokens of their own that the walk favours, so that
  // bare text ends (its closing tag is otherwise a long run of chance bytes).
  const std::vector<std::string> markup = {"\n</parameter>\n", "</function>\n", "</tool_call>", "</arg_value>",
                                           "<arg_key>", "\", ", ")]", "\n```", "<|call|>", "}\n"};
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  tokens.insert(tokens.end(), markup.begin(), markup.end());
  VocabPtr v = grammar::TokenVocab::FromBytes(tokens, {}, {});
  grammar::Grammar schema_grammar;
  grammar::JsonSchemaOptions strict;
  strict.default_additional_properties = false;
  Result<grammar::RuleId> schema_rule =
      grammar::AddJsonSchema(schema_grammar, tools[0]["function"]["parameters"], strict);
  ASSERT_TRUE(schema_rule.ok());
  schema_grammar.SetRoot(*schema_rule);
  auto valid = grammar::Compile(schema_grammar, v);
  ASSERT_TRUE(valid.ok());
  std::mt19937 rng(16);
  for (OutputFormat f : {OutputFormat::kHermes, OutputFormat::kQwen3Coder, OutputFormat::kGlm45,
                         OutputFormat::kPythonic, OutputFormat::kDeepSeekV3, OutputFormat::kHarmony,
                         OutputFormat::kMistral}) {
    SCOPED_TRACE(OutputFormatName(f));
    ToolCallGrammarOptions o;
    o.parallel = false;
    auto g = CompiledFor(f, tools, o, v);
    ASSERT_TRUE(g);
    int finished = 0;
    std::vector<uint32_t> mask(grammar::MaskWords(v->size()));
    for (int walk = 0; walk < 40; ++walk) {
      grammar::Matcher m(g);
      std::string text;
      for (int step = 0; step < 4000 && !m.IsTerminated(); ++step) {
        if (m.CanEnd()) break;
        ASSERT_TRUE(m.FillNextTokenMask(mask).ok());
        std::vector<TokenId> allowed;
        for (TokenId id = 0; id < static_cast<TokenId>(v->size()); ++id)
          if (mask[id >> 5] >> (id & 31) & 1) allowed.push_back(id);
        ASSERT_FALSE(allowed.empty());
        std::vector<TokenId> favoured;
        for (TokenId id : allowed)
          if (id >= 256) favoured.push_back(id);
        const std::vector<TokenId>& from = !favoured.empty() && rng() % 2 ? favoured : allowed;
        const TokenId id = from[rng() % from.size()];
        ASSERT_TRUE(m.AcceptToken(id).ok());
        text += v->bytes(id);
      }
      if (!m.CanEnd()) continue;
      ++finished;
      ParsedOutput out = Parse(f, tools, text);
      ASSERT_EQ(out.tool_calls.size(), 1u) << text;
      EXPECT_EQ(out.tool_calls[0].name, "edit");
      grammar::Matcher check(*valid);
      EXPECT_TRUE(check.AcceptBytes(out.tool_calls[0].arguments) && check.CanEnd())
          << text << "\nread as " << out.tool_calls[0].arguments;
    }
    EXPECT_GE(finished, 10);
  }
}

}  // namespace
}  // namespace llmhost::tool_call_grammar_test
