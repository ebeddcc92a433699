// Forced tool calls (chat/tool_call_grammar.h): for every format with a
// grammar, the markup the grammar accepts is exactly what the output parser
// reads as that call; other tools' names, arguments outside the schema and
// text around the call are refused; markers that are special tokens must come
// as those tokens; formats without a grammar are NotSupported.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/output_parser.h"
#include "chat/tool_call_grammar.h"
#include "grammar/matcher.h"

namespace llmhost {
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

std::shared_ptr<const grammar::CompiledGrammar> Compiled(OutputFormat f, const VocabPtr& v, bool parallel = true) {
  grammar::Grammar g;
  ToolCallGrammarOptions o;
  o.parallel = parallel;
  Result<grammar::RuleId> root = AddToolCallGrammar(g, f, Tools(), *v, o);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  if (!root.ok()) return nullptr;
  g.SetRoot(*root);
  auto c = grammar::Compile(g, v);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

// The grammar takes `text` whole and may end there.
bool Accepts(const std::shared_ptr<const grammar::CompiledGrammar>& g, const std::string& text) {
  grammar::Matcher m(g);
  return m.AcceptBytes(text) && m.CanEnd();
}

struct Case {
  OutputFormat format;
  std::string call;      // a get_weather call in the format's markup, as the grammar writes it
  std::string two;       // two calls
};

std::vector<Case> Cases() {
  const std::string args = R"({"city": "Paris", "unit": "c"})";
  const std::string hermes = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + args + "}\n</tool_call>";
  const std::string hermes_time = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  const std::string llama = "{\"name\": \"get_weather\", \"parameters\": " + args + "}";
  const std::string mistral_call = "{\"name\": \"get_weather\", \"arguments\": " + args + "}";
  const std::string ds_call = "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" + args + "<｜tool▁call▁end｜>";
  const std::string ds_time = "<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>";
  return {
      {OutputFormat::kHermes, hermes, hermes + "\n" + hermes_time},
      {OutputFormat::kLlama3Json, llama, llama + "; {\"name\": \"get_time\", \"parameters\": {}}"},
      {OutputFormat::kMistral, "[TOOL_CALLS][" + mistral_call + "]",
       "[TOOL_CALLS][" + mistral_call + ", {\"name\": \"get_time\", \"arguments\": {}}]"},
      {OutputFormat::kDeepSeekV31, "<｜tool▁calls▁begin｜>" + ds_call + "<｜tool▁calls▁end｜>",
       "<｜tool▁calls▁begin｜>" + ds_call + ds_time + "<｜tool▁calls▁end｜>"},
      {OutputFormat::kKimiK2,
       "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>" + args +
           "<|tool_call_end|><|tool_calls_section_end|>",
       ""},
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

TEST(ToolCallGrammar, FormatsWithoutAGrammarAreNamed) {
  for (OutputFormat f : {OutputFormat::kNone, OutputFormat::kQwen3Coder, OutputFormat::kHarmony}) {
    EXPECT_FALSE(HasToolCallGrammar(f));
    grammar::Grammar g;
    Result<grammar::RuleId> r = AddToolCallGrammar(g, f, Tools(), *ByteVocab());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(OutputFormatName(f)), std::string::npos) << r.status().message();
  }
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

}  // namespace
}  // namespace llmhost
