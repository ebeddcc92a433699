// Named parameters and text that avoids a stop (grammar/json_schema.h):
// the avoiding text is checked against every short string over an alphabet
// that can spell the stop; bare string values against their schemas.
#include <gtest/gtest.h>

#include <string>

#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace llmhost::grammar::named_parameters_test {
namespace {

using nlohmann::ordered_json;

// Every byte a token of its own.
std::shared_ptr<const TokenVocab> ByteVocab() {
  static const auto vocab = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
    return TokenVocab::FromBytes(tokens, {}, {});
  }();
  return vocab;
}

std::shared_ptr<const CompiledGrammar> CompileNode(Grammar& g, NodeId node) {
  const RuleId rule = g.AddRule("root");
  g.SetBody(rule, node);
  g.SetRoot(rule);
  auto c = Compile(g, ByteVocab());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

bool Accepts(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text) {
  Matcher m(g);
  return m.AcceptBytes(text) && m.CanEnd();
}

TEST(TextAvoiding, AcceptsExactlyTheStringsWithoutTheStop) {
  Grammar g;
  Result<NodeId> node = AddTextAvoiding(g, "</p>");
  ASSERT_TRUE(node.ok());
  auto c = CompileNode(g, *node);
  ASSERT_TRUE(c);
  const std::string alphabet = "</p>x";
  // Every string of up to 7 characters over the alphabet.
  std::vector<std::string> level = {""};
  int checked = 0;
  for (int len = 0; len <= 7; ++len) {
    std::vector<std::string> next;
    for (const std::string& s : level) {
      EXPECT_EQ(Accepts(c, s), s.find("</p>") == std::string::npos) << s;
      ++checked;
      for (char a : alphabet) next.push_back(s + a);
    }
    level = std::move(next);
  }
  EXPECT_GT(checked, 90000);
  EXPECT_TRUE(Accepts(c, "é<ü/p>")) << "any UTF-8 text";
  EXPECT_FALSE(Accepts(c, "\xff")) << "only UTF-8";
}

TEST(TextAvoiding, RefusesStopsItCannotBuild) {
  Grammar g;
  EXPECT_FALSE(AddTextAvoiding(g, "").ok());
  EXPECT_FALSE(AddTextAvoiding(g, "<a<").ok()) << "the first character occurs again";
  EXPECT_FALSE(AddTextAvoiding(g, "<é>").ok());
}

TEST(NamedParameters, BareStringsFollowTheirSchemas) {
  const ordered_json schema = ordered_json::parse(R"({"type": "object", "$defs": {"Mode": {"enum": ["r", "w</v>", 3]}},
    "properties": {
      "mode": {"$ref": "#/$defs/Mode"},
      "id": {"type": "string", "format": "uuid"},
      "code": {"type": "string", "pattern": "^[a-z<]+$"},
      "short": {"type": "string", "maxLength": 2},
      "maybe": {"anyOf": [{"type": "string", "enum": ["yes"]}, {"type": "null"}]},
      "n": {"type": "integer"}},
    "required": ["mode"]})");
  Grammar g;
  NamedParametersOptions o;
  o.stop = "</v>";
  o.form = [](const ordered_json& p) {
    ParameterForm f;
    f.bare = !p.contains("type") || p["type"] != "integer";
    if (!f.bare) f.json_type = "integer";
    return f;
  };
  Result<std::vector<NamedParameter>> params = AddNamedParameters(g, schema, o);
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  ASSERT_EQ(params->size(), 6u);
  EXPECT_TRUE((*params)[0].required);
  EXPECT_FALSE((*params)[1].required);
  std::vector<std::shared_ptr<const CompiledGrammar>> c;
  for (const NamedParameter& p : *params) {
    Grammar one = g;
    c.push_back(CompileNode(one, p.value));
    ASSERT_TRUE(c.back());
  }
  EXPECT_TRUE(Accepts(c[0], "r"));
  EXPECT_FALSE(Accepts(c[0], "w</v>")) << "a value holding the stop is left out";
  EXPECT_FALSE(Accepts(c[0], "3")) << "bare text holds only the strings";
  EXPECT_TRUE(Accepts(c[1], "123e4567-e89b-12d3-a456-426614174000"));
  EXPECT_FALSE(Accepts(c[1], "\"123e4567-e89b-12d3-a456-426614174000\""));
  EXPECT_TRUE(Accepts(c[2], "abc"));
  EXPECT_FALSE(Accepts(c[2], "a<b")) << "the stop's first character is kept out of patterns";
  EXPECT_TRUE(Accepts(c[3], "é\""));
  EXPECT_FALSE(Accepts(c[3], "abc"));
  EXPECT_TRUE(Accepts(c[4], "yes"));
  EXPECT_FALSE(Accepts(c[4], "null"));
  EXPECT_TRUE(Accepts(c[5], "-12"));
  EXPECT_FALSE(Accepts(c[5], "null")) << "the schema allows no null";
  EXPECT_FALSE(Accepts(c[5], "\"12\""));
}

TEST(NamedParameters, ObjectsTheFormatsCannotWriteAreRefused) {
  NamedParametersOptions o;
  for (const char* text : {R"({"type": "object", "minProperties": 1})", R"({"type": "object", "anyOf": [{}]})",
                           R"({"type": "array"})", R"({"properties": {"a": true}, "required": ["b"],
                             "additionalProperties": false})"}) {
    Grammar g;
    EXPECT_FALSE(AddNamedParameters(g, ordered_json::parse(text), o).ok()) << text;
  }
  Grammar g;
  o.stop = "</v>";
  o.form = [](const ordered_json&) { return ParameterForm{true, ""}; };
  Result<std::vector<NamedParameter>> r =
      AddNamedParameters(g, ordered_json::parse(R"({"properties": {"n": {"type": "integer"}}})"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/properties/n"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace llmhost::grammar::named_parameters_test
