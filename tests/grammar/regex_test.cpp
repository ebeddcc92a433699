#include "grammar/regex.h"

#include <gtest/gtest.h>

#include "grammar/regex_compiler.h"
#include "grammar_oracle.h"

namespace llmhost::grammar::regex_test {
namespace {

// Whether `text` is in the language of `pattern` (whole-text match, or
// search mode as JSON Schema's `pattern` uses).
bool Matches(std::string_view pattern, std::string_view text, bool search = false) {
  Grammar g;
  Result<NodeId> node = AddRegex(g, pattern, {.search = search});
  EXPECT_TRUE(node.ok()) << pattern << ": " << node.status().ToString();
  if (!node.ok()) return false;
  return testing::GrammarOracle(g).Matches(*node, text);
}

std::string ErrorOf(std::string_view pattern) {
  Grammar g;
  Result<NodeId> node = AddRegex(g, pattern);
  return node.ok() ? "" : node.status().message();
}

TEST(RegexTest, LiteralsAndAlternation) {
  EXPECT_TRUE(Matches("abc", "abc"));
  EXPECT_FALSE(Matches("abc", "abcd"));
  EXPECT_FALSE(Matches("abc", "ab"));
  EXPECT_TRUE(Matches("cat|dog", "dog"));
  EXPECT_FALSE(Matches("cat|dog", "cog"));
  EXPECT_TRUE(Matches("a(b|)c", "ac"));
  EXPECT_TRUE(Matches("", ""));
  EXPECT_TRUE(Matches("é+", "éé"));
  EXPECT_FALSE(Matches("é", "e"));
}

TEST(RegexTest, Quantifiers) {
  EXPECT_TRUE(Matches("a*", ""));
  EXPECT_TRUE(Matches("a*", "aaaa"));
  EXPECT_FALSE(Matches("a+", ""));
  EXPECT_TRUE(Matches("a?b", "b"));
  EXPECT_TRUE(Matches("a{3}", "aaa"));
  EXPECT_FALSE(Matches("a{3}", "aa"));
  EXPECT_TRUE(Matches("a{2,}", "aaaaa"));
  EXPECT_FALSE(Matches("a{2,}", "a"));
  EXPECT_TRUE(Matches("a{1,2}?b", "aab"));
  EXPECT_FALSE(Matches("a{1,2}b", "aaab"));
  EXPECT_TRUE(Matches("(ab)+", "ababab"));
  EXPECT_FALSE(Matches("(ab)+", "aba"));
  EXPECT_TRUE(Matches("x{,2}", "x{,2}"));  // not a quantifier: literal braces
  EXPECT_TRUE(Matches("a{", "a{"));
}

TEST(RegexTest, Classes) {
  EXPECT_TRUE(Matches("[a-c]+", "abcab"));
  EXPECT_FALSE(Matches("[a-c]", "d"));
  EXPECT_TRUE(Matches("[^a-c]", "d"));
  EXPECT_FALSE(Matches("[^a-c]", "b"));
  EXPECT_TRUE(Matches("[^a]", "é"));
  EXPECT_TRUE(Matches("\\d{2}", "42"));
  EXPECT_FALSE(Matches("\\d", "x"));
  EXPECT_TRUE(Matches("\\D", "x"));
  EXPECT_TRUE(Matches("\\w+", "a_Z9"));
  EXPECT_FALSE(Matches("\\w", "-"));
  EXPECT_TRUE(Matches("\\s", "\t"));
  EXPECT_TRUE(Matches("\\s", "\xC2\xA0"));  // U+00A0
  EXPECT_FALSE(Matches("\\S", " "));
  EXPECT_TRUE(Matches("[\\d.-]+", "-1.5"));
  EXPECT_TRUE(Matches("[a-]", "-"));
  EXPECT_TRUE(Matches("[\\]]", "]"));
  EXPECT_TRUE(Matches("[\\b]", "\b"));
  EXPECT_TRUE(Matches(".", "x"));
  EXPECT_FALSE(Matches(".", "\n"));
  EXPECT_FALSE(Matches(".", "\r"));
  EXPECT_TRUE(Matches(".", "\xF0\x9F\x98\x80"));  // U+1F600, one code point
  EXPECT_FALSE(Matches(".", "ab"));
}

TEST(RegexTest, Escapes) {
  EXPECT_TRUE(Matches("\\n\\t", "\n\t"));
  EXPECT_TRUE(Matches("\\x41\\u0042", "AB"));
  EXPECT_TRUE(Matches("\\u{1F600}", "\xF0\x9F\x98\x80"));
  EXPECT_TRUE(Matches("\\uD83D\\uDE00", "\xF0\x9F\x98\x80"));
  EXPECT_TRUE(Matches("\\.\\*\\/\\-", ".*/-"));
  EXPECT_FALSE(Matches("\\.", "x"));
  EXPECT_TRUE(Matches("\\cJ", "\n"));
  EXPECT_TRUE(Matches("\\0", std::string_view("\0", 1)));
}

TEST(RegexTest, AnchorsAndSearch) {
  EXPECT_TRUE(Matches("^abc$", "abc"));
  EXPECT_TRUE(Matches("abc", "xxabcxx", /*search=*/true));
  EXPECT_FALSE(Matches("abc", "xxabxcxx", true));
  EXPECT_TRUE(Matches("^abc", "abcxx", true));
  EXPECT_FALSE(Matches("^abc", "xabc", true));
  EXPECT_TRUE(Matches("abc$", "xabc", true));
  EXPECT_FALSE(Matches("abc$", "abcx", true));
  EXPECT_TRUE(Matches("^a|b$", "axx", true));
  EXPECT_TRUE(Matches("^a|b$", "xxb", true));
  EXPECT_FALSE(Matches("^a|b$", "xax", true));
  EXPECT_TRUE(Matches("", "anything", true));
}

TEST(RegexTest, UnsupportedConstructsNameTheOffset) {
  EXPECT_EQ(ErrorOf("(a)\\1"), "regex: backreference '\\1' is not supported at offset 3");
  EXPECT_NE(ErrorOf("a(?=b)").find("lookahead"), std::string::npos);
  EXPECT_NE(ErrorOf("(?<!a)b").find("lookbehind"), std::string::npos);
  EXPECT_NE(ErrorOf("\\bword").find("word boundary"), std::string::npos);
  EXPECT_NE(ErrorOf("a^b").find("offset 1"), std::string::npos);
  EXPECT_NE(ErrorOf("a$b").find("'$'"), std::string::npos);
  EXPECT_NE(ErrorOf("(^a)").find("'^'"), std::string::npos);
  EXPECT_NE(ErrorOf("\\p{L}").find("Unicode property"), std::string::npos);
  EXPECT_NE(ErrorOf("(?i)a").find("group syntax"), std::string::npos);
  EXPECT_NE(ErrorOf("[]").find("empty class"), std::string::npos);
  EXPECT_NE(ErrorOf("\\k<x>").find("backreference"), std::string::npos);
}

TEST(RegexTest, SyntaxErrors) {
  EXPECT_NE(ErrorOf("(ab").find("unterminated group"), std::string::npos);
  EXPECT_NE(ErrorOf("ab)").find("unbalanced ')'"), std::string::npos);
  EXPECT_NE(ErrorOf("[ab").find("unterminated class"), std::string::npos);
  EXPECT_NE(ErrorOf("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(ErrorOf("a**").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(ErrorOf("a{3,2}").find("out of order"), std::string::npos);
  EXPECT_NE(ErrorOf("[z-a]").find("out of order"), std::string::npos);
  EXPECT_NE(ErrorOf("a{20000000}").find("above 10000000"), std::string::npos);
  EXPECT_NE(ErrorOf("\\").find("trailing backslash"), std::string::npos);
  EXPECT_NE(ErrorOf("\\xZZ").find("bad escape"), std::string::npos);
  EXPECT_NE(ErrorOf("\xFF").find("invalid UTF-8"), std::string::npos);
}

TEST(RegexTest, NestingIsBounded) {
  std::string deep(kMaxRegexNesting + 1, '(');
  deep += "a" + std::string(kMaxRegexNesting + 1, ')');
  EXPECT_NE(ErrorOf(deep).find("nesting deeper"), std::string::npos);
  std::string ok(kMaxRegexNesting, '(');
  ok += "a" + std::string(kMaxRegexNesting, ')');
  EXPECT_TRUE(Matches(ok, "a"));
}

TEST(RegexTest, JsonStringContentEscapesWhereJsonMust) {
  Grammar g;
  Result<NodeId> node = CompileRegex(g, "^a\"b\\\\c\\nd/$", false, RegexText::kJsonString);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  testing::GrammarOracle oracle(g);
  EXPECT_TRUE(oracle.Matches(*node, "a\\\"b\\\\c\\nd/"));
  EXPECT_TRUE(oracle.Matches(*node, "a\\\"b\\\\c\\u000ad\\/"));
  EXPECT_FALSE(oracle.Matches(*node, "a\"b\\\\c\\nd/"));   // raw quote
  EXPECT_FALSE(oracle.Matches(*node, "a\\\"b\\\\c\nd/"));  // raw newline
}

}  // namespace
}  // namespace llmhost::grammar::regex_test
