// Long counted repeats (grammar/repeat_lowering.h): lowered into counts of a
// block rule, they keep their language exactly (every count in range, none
// outside), compile to bounded automata and parse with a few stacks.
#include "grammar/repeat_lowering.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/json_string_chars.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "grammar/rule_inlining.h"
#include "grammar_oracle.h"

namespace llmhost::grammar::repeat_lowering_test {
namespace {

std::shared_ptr<const TokenVocab> ByteVocab() {
  std::vector<std::string> tokens = {"</s>"};
  for (int b = 0x20; b < 0x7f; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  return TokenVocab::FromBytes(tokens, {0}, {0});
}

// A child of the repeat and the text of its i-th copy (the copies vary, so
// that a count is never read off a single kind of string).
struct Child {
  const char* name;
  std::function<NodeId(Grammar&)> make;
  std::vector<std::string> copies;
  std::string Copy(int64_t i) const { return copies[i % copies.size()]; }
};

std::vector<Child> Children() {
  return {
      {"byte", [](Grammar& g) { return g.Bytes({{'a', 'c'}}); }, {"a", "b", "c"}},
      {"multibyte", [](Grammar& g) { return g.Alt({g.Literal("\xC3\xA9"), g.Literal("ab"), g.Literal("c")}); },
       {"\xC3\xA9", "ab", "c", "ab"}},
      {"call",
       [](Grammar& g) {
         RuleId item = g.AddRule("item");  // loops: called, not inlined
         g.SetBody(item, g.Seq({g.Byte('['), g.Repeat(g.Byte('a'), 0, -1), g.Byte(']')}));
         return g.Ref(item);
       },
       {"[]", "[a]", "[aa]"}},
      {"json-char", [](Grammar& g) { return AnyJsonStringChar(g); },
       {"a", "\xC3\xA9", "\\n", "\xE2\x82\xAC", "\\u00e9", "\xF0\x9F\x98\x80", "\\\"", "z"}},
  };
}

// root ::= child{min,max} (max -1: unbounded).
Grammar RepeatGrammar(const Child& child, int32_t min, int32_t max) {
  Grammar g;
  RuleId root = g.AddRule("root");
  g.SetBody(root, g.Repeat(child.make(g), min, max));
  g.SetRoot(root);
  return g;
}

bool InRange(int64_t k, int64_t min, int64_t max) { return k >= min && (max < 0 || k <= max); }

// Feeds copies one at a time, checking after each count k whether the text
// can end there, up to `last` copies (or the first copy refused, which must
// be the one past max). `suffix` closes the text (a string's quote).
void ExpectCounts(const std::shared_ptr<const CompiledGrammar>& cg, const Child& child, int64_t min, int64_t max,
                  int64_t last, const std::string& prefix = "", const std::string& suffix = "") {
  Matcher m(cg);
  ASSERT_TRUE(m.AcceptBytes(prefix));
  for (int64_t k = 0; k <= last; ++k) {
    Matcher end = m;
    bool can_end = suffix.empty() ? end.CanEnd() : end.AcceptBytes(suffix) && end.CanEnd();
    ASSERT_EQ(can_end, InRange(k, min, max)) << child.name << " {" << min << "," << max << "} count " << k;
    bool more = m.AcceptBytes(child.Copy(k));
    ASSERT_EQ(more, max < 0 || k < max) << child.name << " {" << min << "," << max << "} copy " << k + 1;
    if (!more) return;
  }
}

// Small blocks (two to twelve copies) so that short texts cross several
// blocks and levels of blocks: every count of 0..max+1 against the range,
// through the compiled automata, and the edges through the IR's oracle.
TEST(RepeatLowering, EveryCountWithSmallBlocks) {
  const RepeatLimits small = {.unroll = 16, .unroll_any = 16, .block = 12};
  // A parse in the run of fewer than a block and one per level of blocks
  // (two here): more would mean an ambiguous split.
  constexpr int kStacks = 3;
  std::shared_ptr<const TokenVocab> vocab = ByteVocab();
  const std::vector<int32_t> mins = {0, 1, 5, 11, 12, 13, 25, 50};
  const std::vector<int32_t> spans = {-1, 0, 1, 11, 12, 13, 47, 48, 150};
  for (const Child& child : Children()) {
    for (int32_t min : mins) {
      for (int32_t span : spans) {
        int32_t max = span < 0 ? -1 : min + span;
        Grammar g = RepeatGrammar(child, min, max);
        std::vector<uint8_t> inlined = ChooseInlinedRules(g);
        std::optional<Grammar> lowered = LowerLongRepeats(g, &inlined, small);
        // Every child has a state or more: 17 copies pass 16.
        if ((max < 0 ? min + 1 : max) >= 17)
          ASSERT_TRUE(lowered.has_value()) << child.name << " {" << min << "," << max << "}";
        if (!lowered) continue;
        ASSERT_TRUE(lowered->Validate().ok());
        ASSERT_EQ(inlined.size(), lowered->rule_count());
        // Compiled as Compile does, with these limits: blocks are calls.
        auto cg = CompiledGrammar::Build(g, vocab, {.max_stacks = kStacks}, small);
        ASSERT_TRUE(cg.ok()) << cg.status().ToString();
        ExpectCounts(*cg, child, min, max, (max < 0 ? min : max) + 20);
        testing::GrammarOracle oracle(*lowered);
        for (int64_t k : {min - 1, min, min + 1, max - 1, max, max + 1}) {
          if (k < 0 || k > 60) continue;  // the oracle is cubic in the text
          std::string text;
          for (int64_t i = 0; i < k; ++i) text += child.Copy(i);
          EXPECT_EQ(oracle.MatchesRoot(text), InRange(k, min, max)) << child.name << " {" << min << "," << max
                                                                   << "} count " << k;
          if (k > 0 && InRange(k, min, max)) {
            EXPECT_FALSE(oracle.MatchesRoot(text.substr(0, text.size() - 1) + "\x01"));  // a wrong last byte
          }
        }
      }
    }
  }
}

// A count of blocks long enough to be lowered again, and repeats inside
// repeats: the language is the same as the unlowered grammar's (the oracle
// reads both) on every text of a few lengths over the child's alphabet.
TEST(RepeatLowering, NestedRepeatsKeepTheirLanguage) {
  Grammar g;
  RuleId root = g.AddRule("root");
  NodeId inner = g.Repeat(g.Alt({g.Literal("ab"), g.Byte('c')}), 3, 40);
  g.SetBody(root, g.Seq({g.Repeat(g.Seq({inner, g.Byte(';')}), 0, 6), g.Repeat(g.Byte('c'), 2, -1)}));
  g.SetRoot(root);
  std::vector<uint8_t> inlined = ChooseInlinedRules(g);
  std::optional<Grammar> lowered = LowerLongRepeats(g, &inlined, {.unroll = 16, .unroll_any = 16, .block = 8});
  ASSERT_TRUE(lowered.has_value());
  testing::GrammarOracle want(g), got(*lowered);
  std::mt19937 rng(7);
  const std::string pieces[] = {"ab", "c", ";", "cc", "abc"};
  for (int trial = 0; trial < 400; ++trial) {
    std::string text;
    for (int n = rng() % 30; n > 0; --n) text += pieces[rng() % 5];
    EXPECT_EQ(got.MatchesRoot(text), want.MatchesRoot(text)) << text;
  }
  auto cg = CompiledGrammar::Build(g, ByteVocab(), {}, {.unroll = 16, .unroll_any = 16, .block = 8});
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  Matcher m(*cg);
  EXPECT_TRUE(m.AcceptBytes("abcab;ccc;abcabcccababc;cc"));
  EXPECT_TRUE(m.CanEnd());
}

// A child whose strings begin one another is lowered only past unroll_any
// (below it one DFA parses it, as before; past it a block may end at several
// places, a stack each, and the language stays exact); one that matches ""
// never is.
TEST(RepeatLowering, WhichChildrenAreLowered) {
  auto lowered = [](std::function<NodeId(Grammar&)> child, int32_t max, Grammar* g) {
    RuleId root = g->AddRule("root");
    g->SetBody(root, g->Repeat(child(*g), 0, max));
    g->SetRoot(root);
    std::vector<uint8_t> inlined = ChooseInlinedRules(*g);
    return LowerLongRepeats(*g, &inlined, {.unroll = 16, .unroll_any = 64, .block = 12});
  };
  auto prefix_code = [](Grammar& g) { return g.Alt({g.Literal("ab"), g.Literal("b")}); };
  auto other = [](Grammar& g) { return g.Alt({g.Literal("a"), g.Literal("aa")}); };
  auto nullable = [](Grammar& g) { return g.Optional(g.Byte('a')); };
  Grammar g1, g2, g3, g4;
  EXPECT_TRUE(lowered(prefix_code, 12, &g1).has_value());
  EXPECT_FALSE(lowered(other, 12, &g2).has_value());
  std::optional<Grammar> far = lowered(other, 40, &g3);
  ASSERT_TRUE(far.has_value());
  EXPECT_FALSE(lowered(nullable, 1000, &g4).has_value());
  testing::GrammarOracle oracle(*far);
  for (int n = 0; n <= 82; ++n) EXPECT_EQ(oracle.MatchesRoot(std::string(n, 'a')), n <= 80) << n;
}

// A JSON string's characters (one to six bytes each, escapes counted as one)
// under minLength / maxLength, compiled with the default limits: every count
// up to past the bound, around several blocks.
TEST(RepeatLowering, JsonStringLengthsAreExact) {
  const Child json = Children()[3];
  struct Bounds {
    int64_t min, max;
  } cases[] = {{150, 440}, {287, 287}, {300, -1}};
  std::shared_ptr<const TokenVocab> vocab = ByteVocab();
  for (Bounds b : cases) {
    nlohmann::ordered_json schema = {{"type", "string"}, {"minLength", b.min}};
    if (b.max >= 0) schema["maxLength"] = b.max;
    Grammar g;
    auto rule = AddJsonSchema(g, schema);
    ASSERT_TRUE(rule.ok()) << rule.status().ToString();
    g.SetRoot(*rule);
    auto cg = Compile(g, vocab, {.max_stacks = 2});  // one level of blocks: a parse in a block, one in the run
    ASSERT_TRUE(cg.ok()) << cg.status().ToString();
    ExpectCounts(*cg, json, b.min, b.max, (b.max < 0 ? b.min : b.max) + 50, "\"", "\"");
  }
}

// Claude Code's Workflow tool holds a string of maxLength 524288: it compiles
// small, takes exactly that many characters, and a long text keeps two parse
// stacks (the matcher would fail past max_stacks).
TEST(RepeatLowering, HalfMegabyteStringEndsExactlyAtItsBound) {
  Grammar g;
  auto rule = AddJsonSchema(g, nlohmann::ordered_json::parse(R"({"type":"string","maxLength":524288})"));
  ASSERT_TRUE(rule.ok());
  g.SetRoot(*rule);
  auto cg = Compile(g, ByteVocab(), {.max_stacks = 2});
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  EXPECT_LT((*cg)->state_count(), 40000u);
  Matcher m(*cg);
  ASSERT_TRUE(m.AcceptBytes("\""));
  const std::string chunk = std::string(1000, 'x') + "\xC3\xA9" + "\\n" + std::string(998, 'y');  // 2,000 chars
  for (int i = 0; i < 262; ++i) ASSERT_TRUE(m.AcceptBytes(chunk)) << "after " << i * 2000 << " characters";
  ASSERT_TRUE(m.AcceptBytes(std::string(287, 'z')));  // 524,287
  Matcher before_end = m;
  EXPECT_TRUE(before_end.AcceptBytes("\"") && before_end.CanEnd());
  ASSERT_TRUE(m.AcceptBytes("\xE2\x82\xAC"));  // 524,288
  Matcher at_end = m;
  EXPECT_TRUE(at_end.AcceptBytes("\"") && at_end.CanEnd());
  EXPECT_FALSE(m.AcceptBytes("a"));
  EXPECT_FALSE(m.AcceptBytes("\\n"));
}

// Regex and GBNF counts go through the same lowering.
TEST(RepeatLowering, RegexAndGbnfCounts) {
  std::shared_ptr<const TokenVocab> vocab = ByteVocab();
  Grammar rg;
  auto node = AddRegex(rg, "x[a-c]{60000,70000}y");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  RuleId root = rg.AddRule("root");
  rg.SetBody(root, *node);
  rg.SetRoot(root);
  auto regex = Compile(rg, vocab);
  ASSERT_TRUE(regex.ok()) << regex.status().ToString();
  for (auto [count, ok] : {std::pair{59999, false}, {60000, true}, {65432, true}, {70000, true}, {70001, false}}) {
    Matcher m(*regex);
    std::string text = "x";
    for (int i = 0; i < count; ++i) text += "abc"[i % 3];
    EXPECT_EQ(m.AcceptBytes(text + "y") && m.CanEnd(), ok) << count;
  }
  Grammar gg;
  auto gbnf = AddGbnf(gg, "root ::= (\"ab\" | [c-e]){0,250000} \".\"");
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().ToString();
  gg.SetRoot(*gbnf);
  auto cg = Compile(gg, vocab);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  Matcher m(*cg);
  std::string run;
  for (int i = 0; i < 250000; ++i) run += i % 2 ? "ab" : "d";
  ASSERT_TRUE(m.AcceptBytes(run));
  Matcher done = m;
  EXPECT_TRUE(done.AcceptBytes(".") && done.CanEnd());
  EXPECT_FALSE(m.AcceptBytes("c"));
}

// Counts up to kMaxRepeat compile to bounded automata.
TEST(RepeatLowering, CountsUpToTheMaximumCompileSmall) {
  std::shared_ptr<const TokenVocab> vocab = ByteVocab();
  Grammar g;
  RuleId top = g.AddRule("root");
  g.SetBody(top, g.Repeat(AnyJsonStringChar(g), kMaxRepeat / 2 - 12345, kMaxRepeat));
  g.SetRoot(top);
  auto big = Compile(g, vocab);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_LT((*big)->state_count(), 60000u);
  // Ten million empty strings: the empty string, at once.
  Grammar nothing;
  RuleId only = nothing.AddRule("root");
  NodeId empties = nothing.Repeat(nothing.Seq({nothing.Empty(), nothing.Empty()}), 0, kMaxRepeat);
  nothing.SetBody(only, nothing.Seq({empties, nothing.Byte('a')}));
  nothing.SetRoot(only);
  auto empty = Compile(nothing, vocab);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  Matcher one(*empty);
  EXPECT_TRUE(one.AcceptBytes("a") && one.CanEnd());
  // (a{1000}){10000}: ten million bytes, nested.
  Grammar nested;
  RuleId root = nested.AddRule("root");
  nested.SetBody(root, nested.Repeat(nested.Repeat(nested.Byte('a'), 1000, 1000), 0, 10000));
  nested.SetRoot(root);
  auto cg = Compile(nested, vocab);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  Matcher m(*cg);
  EXPECT_TRUE(m.AcceptBytes(std::string(3000, 'a')) && m.CanEnd());
  EXPECT_TRUE(m.AcceptBytes(std::string(999, 'a')) && !m.CanEnd());

}

// A repeat of something that can be empty stays unrolled, where every DFA
// state's set holds the states after it: refused, not grown.
TEST(RepeatLowering, ARepeatOfAnEmptyMatchIsRefused) {
  Grammar empty;
  auto optional = AddGbnf(empty, "root ::= (\"a\"?){0,100000} \"b\"");
  ASSERT_TRUE(optional.ok());
  empty.SetRoot(*optional);
  auto refused = Compile(empty, ByteVocab());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("too large an automaton"), std::string::npos) << refused.status().message();
}

// Past kMaxRepeat each source says so.
TEST(RepeatLowering, CountsPastTheMaximumAreRefused) {
  Grammar over;
  RuleId r = over.AddRule("root");
  over.SetBody(r, over.Repeat(over.Byte('a'), 0, kMaxRepeat + 1));
  over.SetRoot(r);
  EXPECT_NE(over.Validate().message().find("out of range"), std::string::npos);
  Grammar rx;
  auto bad_regex = AddRegex(rx, "a{10000001}");
  ASSERT_FALSE(bad_regex.ok());
  EXPECT_NE(bad_regex.status().message().find("above 10000000"), std::string::npos);
  Grammar gb;
  auto bad_gbnf = AddGbnf(gb, "root ::= \"a\"{0,10000001}");
  ASSERT_FALSE(bad_gbnf.ok());
  EXPECT_NE(bad_gbnf.status().message().find("over 10000000"), std::string::npos);
  for (const char* schema : {R"({"type":"string","maxLength":10000001})",
                             R"({"type":"array","minItems":18446744073709551615})",
                             R"({"type":"string","maxLength":18446744073709551615})"}) {
    Grammar js;
    auto bad = AddJsonSchema(js, nlohmann::ordered_json::parse(schema));
    ASSERT_FALSE(bad.ok()) << schema;
    EXPECT_NE(bad.status().message().find("cannot be enforced"), std::string::npos) << bad.status().message();
  }
}

}  // namespace
}  // namespace llmhost::grammar::repeat_lowering_test
