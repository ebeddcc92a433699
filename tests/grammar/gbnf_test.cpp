#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include "grammar/matcher.h"
#include "grammar_test_util.h"

namespace llmhost::grammar::gbnf_test {
namespace {

// Parses `text` as the whole grammar; the Recognizer then reads it.
Result<Grammar> Parse(std::string_view text, const TokenVocab* vocab = nullptr) {
  Grammar g;
  ASSIGN_OR_RETURN(RuleId root, AddGbnf(g, text, vocab));
  g.SetRoot(root);
  return g;
}

bool Matches(const Grammar& g, const std::string& s) { return testing::Recognizer(g, s).Complete(); }

TEST(Gbnf, LiteralsClassesAndRepetition) {
  auto g = Parse(R"(
# a comment line
root ::= "x" digits? ("," digits)* [a-c]{2} tail   # trailing comment
digits ::= [0-9]+
tail ::= [^a-z\n]{1,3} | "\x41\u00e9\U0001F389" | "\"\\\t"
)");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(Matches(*g, "x12,3abZ"));
  EXPECT_TRUE(Matches(*g, "xcc!!!"));
  EXPECT_TRUE(Matches(*g, "x,1,22aaA\xC3\xA9\xF0\x9F\x8E\x89"));
  EXPECT_TRUE(Matches(*g, "xab\"\\\t"));
  EXPECT_FALSE(Matches(*g, "xab!!!!"));  // {1,3}
  EXPECT_FALSE(Matches(*g, "xabz"));     // negated class
  EXPECT_FALSE(Matches(*g, "x,abZ"));    // digits+
  EXPECT_FALSE(Matches(*g, "xa!"));
}

TEST(Gbnf, DotMatchesAnyCharacter) {
  auto g = Parse("root ::= \"<\" . \">\"");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(Matches(*g, "<a>"));
  EXPECT_TRUE(Matches(*g, "<\xE2\x82\xAC>"));
  EXPECT_FALSE(Matches(*g, "<\xE2\x82>"));
  EXPECT_FALSE(Matches(*g, "<ab>"));
}

TEST(Gbnf, BracesForms) {
  auto g = Parse("root ::= \"a\"{2} \"b\"{1,} \"c\"{0,2}");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(Matches(*g, "aab"));
  EXPECT_TRUE(Matches(*g, "aabbbcc"));
  EXPECT_FALSE(Matches(*g, "ab"));
  EXPECT_FALSE(Matches(*g, "aabccc"));
}

TEST(Gbnf, MultiLineAlternativesAndRecursion) {
  auto g = Parse(R"(root ::= value
value ::=
    "[" ws ( value ( "," ws value )* )? "]"
  | "n"
ws ::= [ ]*
)");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(Matches(*g, "[n,[ n],[]]"));
  EXPECT_FALSE(Matches(*g, "[n,]"));
  testing::SmallVocab v;
  EXPECT_TRUE(Compile(*g, v.vocab).ok());
}

TEST(Gbnf, SpecialTokens) {
  testing::SmallVocab v;
  auto g = Parse("root ::= <s1> \"a\" <[" + std::to_string(v.special2) + "]>", v.vocab.get());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto cg = Compile(*g, v.vocab);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  Matcher m(*cg);
  EXPECT_TRUE(m.AcceptToken(v.special1).ok());
  EXPECT_TRUE(m.AcceptBytes("a"));
  EXPECT_TRUE(m.AcceptToken(v.special2).ok());
  EXPECT_TRUE(m.IsTerminated());
  auto unknown = Parse("root ::= <nope>", v.vocab.get());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown special token <nope>"), std::string::npos);
  EXPECT_FALSE(Parse("root ::= <[999999]>", v.vocab.get()).ok());
}

TEST(Gbnf, ErrorsGiveLineAndColumn) {
  struct Case {
    const char* text;
    const char* want;
  };
  for (Case c : std::initializer_list<Case>{
           {"root ::= \"a\"\nother ::= undefined-rule", "line 2, column 11: rule 'undefined-rule' is not defined"},
           {"start ::= \"a\"", "no rule 'root'"},
           {"root ::= \"abc", "line 1, column 14: unterminated string"},
           {"root ::= [a-", "unterminated character class"},
           {"root ::= [z-a]", "line 1, column 11: character range out of order"},
           {"root ::= (\"a\"", "expected ')'"},
           {"root ::= \"a\"{3,1}", "max below min"},
           {"root ::= \"a\"{999999999}", "repetition count over"},
           {"root \"a\"", "line 1, column 6: expected '::='"},
           {"root ::= \"a\" )", "line 1, column 14: expected the end of the line"},
           {"root ::= \"\\q\"", "unknown escape"},
           {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
           {"root ::= \"\\xZZ\"", "hex digits"},
       }) {
    auto g = Parse(c.text);
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_NE(g.status().message().find(c.want), std::string::npos) << c.text << " -> " << g.status().ToString();
  }
}

TEST(Gbnf, DeepNestingIsAnError) {
  std::string text = "root ::= " + std::string(1000, '(') + "\"a\"" + std::string(1000, ')');
  auto g = Parse(text);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("nested too deeply"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::grammar::gbnf_test
