#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include "grammar/matcher.h"
#include "grammar_oracle.h"

namespace llmhost::grammar::json_schema_test {
namespace {

using OJson = nlohmann::ordered_json;

struct Compiled {
  Grammar g;
  Result<RuleId> rule = Status::Internal("unset");
  bool Accepts(std::string_view text) const { return testing::GrammarOracle(g).MatchesRule(*rule, text); }
};

std::unique_ptr<Compiled> Compile(std::string_view schema, JsonSchemaOptions options = {}) {
  auto c = std::make_unique<Compiled>();
  c->rule = AddJsonSchema(c->g, OJson::parse(schema), options);
  return c;
}

// The schema's rule compiled against a vocabulary of single ASCII bytes.
Result<std::shared_ptr<const CompiledGrammar>> CompileAutomata(Compiled& c) {
  c.g.SetRoot(*c.rule);
  std::vector<std::string> tokens = {"</s>"};
  for (int b = 0x20; b < 0x7f; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  return grammar::Compile(c.g, TokenVocab::FromBytes(tokens, {0}, {0}));
}

bool MatchesAutomata(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text) {
  Matcher m(g);
  return m.AcceptBytes(text) && m.CanEnd();
}

std::string ErrorOf(std::string_view schema) {
  auto c = Compile(schema);
  return c->rule.ok() ? "" : c->rule.status().message();
}

TEST(JsonSchemaTest, PropertiesFollowTheSchemaOrder) {
  auto c = Compile(R"({"type":"object","properties":{"zeta":{"type":"integer"},"alpha":{"type":"integer"}},
                       "required":["zeta","alpha"],"additionalProperties":false})");
  ASSERT_TRUE(c->rule.ok()) << c->rule.status().ToString();
  EXPECT_TRUE(c->Accepts(R"({"zeta":1,"alpha":2})"));
  EXPECT_FALSE(c->Accepts(R"({"alpha":2,"zeta":1})"));
}

TEST(JsonSchemaTest, WhitespaceRunsAreBounded) {
  auto c = Compile(R"({"type":"array","items":{"type":"integer"}})", {.max_whitespace = 2});
  ASSERT_TRUE(c->rule.ok());
  EXPECT_TRUE(c->Accepts("[1,  2]"));
  EXPECT_TRUE(c->Accepts("[  ]"));
  EXPECT_FALSE(c->Accepts("[1,   2]"));
  EXPECT_FALSE(c->Accepts("[1   ,2]"));
  EXPECT_FALSE(c->Accepts("[   ]"));
  auto none = Compile(R"({"type":"array"})", {.max_whitespace = 0});
  EXPECT_TRUE(none->Accepts("[1,2]"));
  EXPECT_FALSE(none->Accepts("[1, 2]"));
}

TEST(JsonSchemaTest, DefaultAdditionalPropertiesOption) {
  const char* schema = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
  EXPECT_TRUE(Compile(schema)->Accepts(R"({"a":1,"b":2})"));
  auto strict = Compile(schema, {.default_additional_properties = false});
  EXPECT_TRUE(strict->Accepts(R"({"a":1})"));
  EXPECT_FALSE(strict->Accepts(R"({"a":1,"b":2})"));
}

// An extra key may be any string but a declared name: prefixes, extensions
// and escaped spellings are told apart exactly.
TEST(JsonSchemaTest, ExtraKeysAvoidDeclaredNamesExactly) {
  auto c = Compile(R"({"type":"object","properties":{"ab":{"type":"integer"},"a/c":{"type":"integer"}}})");
  ASSERT_TRUE(c->rule.ok());
  for (const char* ok :
       {R"({"a":"x"})", R"({"abc":"x"})", R"({"b":"x"})", R"({"":"x"})", R"({"a/":"x"})", R"({"a/cd":"x"})"})
    EXPECT_TRUE(c->Accepts(ok)) << ok;
  for (const char* bad : {R"({"ab":"x"})", R"({"a/c":"x"})", R"({"a\/c":"x"})", R"({"ab":1,"ab":"x"})"})
    EXPECT_FALSE(c->Accepts(bad)) << bad;
}

TEST(JsonSchemaTest, AnyJsonObject) {
  Grammar g;
  RuleId rule = AddAnyJsonObject(g);
  testing::GrammarOracle oracle(g);
  EXPECT_TRUE(oracle.MatchesRule(rule, R"({"a":[1,{"b":null}],"c":"\u00e9"})"));
  EXPECT_TRUE(oracle.MatchesRule(rule, "{}"));
  EXPECT_FALSE(oracle.MatchesRule(rule, "[]"));
  EXPECT_FALSE(oracle.MatchesRule(rule, R"("x")"));
  EXPECT_FALSE(oracle.MatchesRule(rule, R"({"a":1,})"));
}

TEST(JsonSchemaTest, UnsupportedKeywordsNameThePath) {
  EXPECT_EQ(ErrorOf(R"({"type":"object","properties":{"tags":{"type":"array","uniqueItems":true}}})"),
            "'uniqueItems' at /properties/tags is not supported");
  EXPECT_EQ(ErrorOf(R"({"items":{"contains":{}}})"), "'contains' at /items is not supported");
  EXPECT_EQ(ErrorOf(R"({"anyOf":[{"type":"string"},{"not":{}}]})"), "'not' at /anyOf/1 is not supported");
  EXPECT_EQ(ErrorOf(R"({"properties":{"a/b":{"if":{}}}})"), "'if' at /properties/a~1b is not supported");
  EXPECT_NE(ErrorOf(R"({"type":"number","multipleOf":3})").find("'multipleOf' at /"), std::string::npos);
}

TEST(JsonSchemaTest, AnnotationsAreIgnored) {
  auto c = Compile(R"({"title":"t","description":"d","examples":[1],"default":2,"$comment":"c","deprecated":true,
                       "readOnly":true,"writeOnly":false,"$schema":"x","$id":"y","type":"integer"})");
  ASSERT_TRUE(c->rule.ok());
  EXPECT_TRUE(c->Accepts("7"));
}

TEST(JsonSchemaTest, DepthAndSizeAreBounded) {
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += R"({"type":"array","items":)";
  deep += "{}";
  for (int i = 0; i < 200; ++i) deep += "}";
  EXPECT_NE(ErrorOf(deep).find("nested deeper than"), std::string::npos);
  // Each level holds the previous one twice, inlined ($ref beside another
  // keyword): 2^30 copies unless bounded.
  std::string defs = R"({"$defs":{"d0":{"type":"array"})";
  for (int i = 1; i <= 30; ++i) {
    std::string prev = "{\"$ref\":\"#/$defs/d" + std::to_string(i - 1) + "\",\"minItems\":0}";
    defs += ",\"d" + std::to_string(i) + "\":{\"type\":\"array\",\"prefixItems\":[" + prev + "," + prev + "]}";
  }
  defs += R"(},"$ref":"#/$defs/d30","minItems":0})";
  std::string error = ErrorOf(defs);
  EXPECT_TRUE(error.find("grows past") != std::string::npos || error.find("nested deeper") != std::string::npos)
      << error;
  // Long length bounds stay small grammars.
  auto big = Compile(R"({"type":"string","maxLength":5000000})");
  ASSERT_TRUE(big->rule.ok());
  EXPECT_LT(big->g.node_count(), 1000u);
  EXPECT_NE(ErrorOf(R"({"type":"string","minLength":100000000000})").find("cannot be enforced"), std::string::npos);
}

TEST(JsonSchemaTest, IntegerRangesOfAnySize) {
  auto c = Compile(R"({"type":"integer","minimum":-12345678901234567,"maximum":98765432109876543})");
  ASSERT_TRUE(c->rule.ok());
  for (const char* ok : {"-12345678901234567", "-1", "0", "98765432109876543", "98765432109876542", "9876543210987654"})
    EXPECT_TRUE(c->Accepts(ok)) << ok;
  for (const char* bad : {"-12345678901234568", "98765432109876544", "100000000000000000", "-0", "007"})
    EXPECT_FALSE(c->Accepts(bad)) << bad;
}

// Fraction texts compare as the doubles they round to: with an exclusive
// bound, a text that rounds onto the bound is out.
TEST(JsonSchemaTest, ExclusiveNumberBoundsHoldAfterRounding) {
  auto c = Compile(R"({"type":"number","exclusiveMinimum":0.1})");
  ASSERT_TRUE(c->rule.ok());
  EXPECT_FALSE(c->Accepts("0.1"));
  EXPECT_FALSE(c->Accepts("0.10000000000000000001"));  // rounds to 0.1
  EXPECT_TRUE(c->Accepts("0.10000000000000002"));
  EXPECT_TRUE(c->Accepts("1"));
}

// Above 0 means from the next double up, 2^-1074, whose exact decimal has
// ~750 digits: the bound is its shortest text (4e-324) and compiles.
TEST(JsonSchemaTest, ExclusiveBoundsAtZeroAndOneCompile) {
  auto c = Compile(R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1})");
  ASSERT_TRUE(c->rule.ok()) << c->rule.status().ToString();
  auto compiled = CompileAutomata(*c);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const std::string tiny = "0." + std::string(323, '0');  // then the digit of 10^-324
  // Valid texts are those whose double is strictly between 0 and 1.
  for (const std::string& ok : {std::string("0.5"), tiny + "4", tiny + "9", std::string("0.9999999999999999")})
    EXPECT_TRUE(MatchesAutomata(*compiled, ok)) << ok;
  // 2e-324 rounds to 0, 0.99999999999999995 to 1.
  for (const std::string& bad : {std::string("0"), std::string("0.0"), tiny + "2", std::string("1.0"),
                                 std::string("0.99999999999999995"), std::string("-0.5")})
    EXPECT_FALSE(MatchesAutomata(*compiled, bad)) << bad;
  for (const std::string& t : {tiny + "4", tiny + "2", std::string("0.99999999999999995")})
    EXPECT_EQ(c->Accepts(t), MatchesAutomata(*compiled, t)) << "the oracle agrees: " << t;
}

// Optional properties: each member's continuation is shared by taking and
// skipping it, which expanded in place doubles per member (2^24 here).
TEST(JsonSchemaTest, ManyOptionalPropertiesCompile) {
  std::string props;
  for (char k = 'a'; k < 'a' + 24; ++k)
    props += std::string(props.empty() ? "" : ",") + "\"" + k + "\":{\"type\":\"integer\"}";
  auto c = Compile("{\"type\":\"object\",\"properties\":{" + props + "},\"additionalProperties\":false}");
  ASSERT_TRUE(c->rule.ok()) << c->rule.status().ToString();
  auto compiled = CompileAutomata(*c);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_TRUE(MatchesAutomata(*compiled, R"({"a":1,"m":2,"x":3})"));
  EXPECT_TRUE(MatchesAutomata(*compiled, "{}"));
  EXPECT_FALSE(MatchesAutomata(*compiled, R"({"m":2,"a":1})"));  // the schema's order
  EXPECT_FALSE(MatchesAutomata(*compiled, R"({"a":1,"a":1})"));
}

// A bounded count of a large item: one call per position, not maxItems
// copies of the item's automaton (here 300 x an enum of ~2,000 states).
TEST(JsonSchemaTest, BoundedArraysOfLargeItemsCompile) {
  std::string names;
  for (int i = 0; i < 100; ++i) names += std::string(i ? "," : "") + "\"name_" + std::to_string(i * 7919) + "_end\"";
  auto c = Compile(R"({"type":"array","maxItems":300,"items":{"enum":[)" + names + "]}}");
  ASSERT_TRUE(c->rule.ok()) << c->rule.status().ToString();
  auto compiled = CompileAutomata(*c);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  std::string most = "[", too_many;
  for (int i = 0; i < 300; ++i)
    most += std::string(i ? "," : "") + "\"name_" + std::to_string(i % 100 * 7919) + "_end\"";
  too_many = most + R"(,"name_0_end"])";
  most += "]";
  EXPECT_TRUE(MatchesAutomata(*compiled, most));
  EXPECT_FALSE(MatchesAutomata(*compiled, too_many));
  EXPECT_FALSE(MatchesAutomata(*compiled, R"(["name_1_end"])"));
}

TEST(JsonSchemaTest, RefCycleWithoutTextIsAnError) {
  EXPECT_NE(ErrorOf(R"({"$ref":"#"})").find("refers to itself"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})")
                .find("refers to itself"),
            std::string::npos);
}

}  // namespace
}  // namespace llmhost::grammar::json_schema_test
