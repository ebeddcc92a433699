#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar_test_util.h"

namespace llmhost::grammar::matcher_test {
namespace {

using testing::Recognizer;
using testing::SmallVocab;

std::vector<uint32_t> Mask(Matcher& m, size_t vocab, Status* status = nullptr) {
  std::vector<uint32_t> mask(MaskWords(vocab), 0xFFFFFFFFu);
  Status st = m.FillNextTokenMask(mask);
  if (status != nullptr) {
    *status = st;
  } else {
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return mask;
}

std::shared_ptr<const CompiledGrammar> MustCompile(const Grammar& g, std::shared_ptr<const TokenVocab> vocab,
                                                   CompileOptions options = {}) {
  auto r = Compile(g, std::move(vocab), options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : nullptr;
}

// Checks the mask bit for bit against each token tried on a copy, and the
// grammar's own reading of the text (Recognizer) for byte tokens. False
// when the grammar is too ambiguous for the stack limit (the walk stops).
bool CheckMask(const Grammar& g, const SmallVocab& v, Matcher& m, const std::string& text, bool use_recognizer) {
  Status st;
  std::vector<uint32_t> mask = Mask(m, v.tokens.size(), &st);
  if (st.code() == StatusCode::kResourceExhausted) return false;
  bool any = false;
  for (size_t t = 0; t < v.tokens.size(); ++t) {
    TokenId id = static_cast<TokenId>(t);
    bool expected;
    if (id == v.eos) {
      expected = m.CanEnd();
    } else if (id == v.special1 || id == v.special2) {
      Matcher copy = m;
      expected = copy.AcceptToken(id).ok();
    } else if (v.tokens[t].empty()) {
      expected = false;
    } else {
      Matcher copy = m;
      expected = copy.AcceptBytes(v.tokens[t]);
      // A grammar too ambiguous for the stack limit fails the step instead.
      Matcher by_token = m;
      Status accepted = by_token.AcceptToken(id);
      if (accepted.code() == StatusCode::kResourceExhausted) return false;
      EXPECT_EQ(accepted.ok(), expected);
      if (use_recognizer) {
        EXPECT_EQ(expected, Recognizer(g, text + v.tokens[t]).IsPrefix())
            << "text '" << text << "' token '" << v.tokens[t] << "'";
      }
    }
    any = any || expected;
    if (st.ok()) {
      EXPECT_EQ(MaskAllows(mask, id), expected) << "text '" << text << "' token " << t << " '" << v.tokens[t] << "'";
    }
  }
  if (!st.ok()) {
    EXPECT_FALSE(any) << st.ToString();
  }
  if (use_recognizer) {
    EXPECT_EQ(m.CanEnd(), Recognizer(g, text).Complete()) << "text '" << text << "'";
  }
  return st.ok();
}

void RandomGrammarsAgainstReferences(bool with_tokens, uint32_t seed, int grammars) {
  SmallVocab v;
  std::mt19937 rng(seed);
  int compiled = 0;
  for (int gi = 0; gi < grammars; ++gi) {
    Grammar g = testing::RandomGrammar(rng, with_tokens, v.special1, v.special2);
    auto r = Compile(g, v.vocab);
    if (!r.ok()) continue;
    ++compiled;
    for (int walk = 0; walk < 3; ++walk) {
      Matcher m(*r);
      std::string text;
      for (int step = 0; step < 12 && !m.IsTerminated(); ++step) {
        if (!CheckMask(g, v, m, text, !with_tokens)) break;
        std::vector<uint32_t> mask = Mask(m, v.tokens.size());
        std::vector<TokenId> allowed;
        for (size_t t = 0; t < v.tokens.size(); ++t)
          if (MaskAllows(mask, static_cast<TokenId>(t))) allowed.push_back(static_cast<TokenId>(t));
        if (allowed.empty()) break;
        TokenId pick = allowed[rng() % allowed.size()];
        ASSERT_TRUE(m.AcceptToken(pick).ok());
        if (pick == v.eos) {
          EXPECT_TRUE(m.IsTerminated());
        } else {
          text += v.vocab->bytes(pick);
        }
      }
    }
  }
  EXPECT_GT(compiled, grammars / 4);
}

TEST(Matcher, RandomGrammarsMatchBruteForceAndRecognizer) { RandomGrammarsAgainstReferences(false, 7, 1500); }

TEST(Matcher, RandomGrammarsWithSpecialTokensMatchBruteForce) { RandomGrammarsAgainstReferences(true, 11, 800); }

// root ::= "[" ( item ( "," item )* )? "]" with item ::= "a" | root.
Grammar NestedBrackets() {
  Grammar g;
  RuleId root = g.AddRule("root"), item = g.AddRule("item");
  g.SetRoot(root);
  NodeId items = g.Seq({g.Ref(item), g.Repeat(g.Seq({g.Byte(','), g.Ref(item)}), 0, -1)});
  g.SetBody(root, g.Seq({g.Byte('['), g.Optional(items), g.Byte(']')}));
  g.SetBody(item, g.Alt({g.Byte('a'), g.Ref(root)}));
  return g;
}

TEST(Matcher, NestedBracketsTrackDepth) {
  auto vocab = TokenVocab::FromBytes({"[", "]", ",", "a", "[[", "]]", "],[", "a]", "</s>"}, {8}, {8});
  auto cg = MustCompile(NestedBrackets(), vocab);
  Matcher m(cg);
  for (const char* part : {"[[", "[a", ",a]", ",["}) EXPECT_TRUE(m.AcceptBytes(part)) << part;
  EXPECT_FALSE(m.CanEnd());
  std::vector<uint32_t> mask = Mask(m, 9);
  EXPECT_TRUE(MaskAllows(mask, 3));   // a
  EXPECT_TRUE(MaskAllows(mask, 4));   // [[
  EXPECT_TRUE(MaskAllows(mask, 1));   // ] closes the empty list
  EXPECT_FALSE(MaskAllows(mask, 2));  // , right after [
  EXPECT_FALSE(MaskAllows(mask, 8));  // EOS: three brackets open
  EXPECT_TRUE(m.AcceptBytes("]]"));
  EXPECT_FALSE(m.CanEnd());
  EXPECT_FALSE(m.AcceptBytes("]]"));  // only one left open
  EXPECT_TRUE(m.AcceptBytes("]"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_TRUE(m.IsTerminated());
  mask = Mask(m, 9);
  EXPECT_TRUE(MaskAllows(mask, 8));
  EXPECT_TRUE(m.AcceptToken(8).ok());
  EXPECT_TRUE(m.IsTerminated());
  EXPECT_FALSE(m.AcceptToken(3).ok());
}

TEST(Matcher, MultiByteClassesAndSplitCharacters) {
  SmallVocab v;
  Grammar g;
  RuleId root = g.AddRule("root");
  g.SetRoot(root);
  g.SetBody(root, g.Repeat(g.Codepoints({{0xE9, 0xE9}, {0x20AC, 0x20AC}}), 1, -1));
  auto cg = MustCompile(g, v.vocab);
  Matcher m(cg);
  auto id_of = [&](std::string_view s) {
    for (size_t i = 0; i < v.tokens.size(); ++i)
      if (v.tokens[i] == s) return static_cast<TokenId>(i);
    return TokenId{-1};
  };
  std::vector<uint32_t> mask = Mask(m, v.tokens.size());
  EXPECT_TRUE(MaskAllows(mask, id_of("\xC3")));
  EXPECT_TRUE(MaskAllows(mask, id_of("\xE2\x82")));
  EXPECT_TRUE(MaskAllows(mask, id_of("\xC3\xA9\xC3\xA9")));
  EXPECT_FALSE(MaskAllows(mask, id_of("\xA9")));  // a continuation byte cannot start
  EXPECT_FALSE(MaskAllows(mask, id_of("a")));
  EXPECT_FALSE(MaskAllows(mask, v.eos));
  ASSERT_TRUE(m.AcceptToken(id_of("\xE2")).ok());
  mask = Mask(m, v.tokens.size());
  EXPECT_TRUE(MaskAllows(mask, id_of("\x82")));
  EXPECT_FALSE(MaskAllows(mask, id_of("\x82\xAC" "c")));  // completes €, then 'c' is not in the class
  EXPECT_FALSE(MaskAllows(mask, id_of("\xC3")));
  EXPECT_EQ(m.ForcedBytes(), "\x82\xAC");
  ASSERT_TRUE(m.AcceptBytes("\x82\xAC"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.IsTerminated());
}

TEST(Matcher, SpecialTokensOnlyWhereTheGrammarHasThem) {
  SmallVocab v;
  Grammar g;
  RuleId root = g.AddRule("root");
  g.SetRoot(root);
  g.SetBody(root, g.Seq({g.Token(v.special1), g.Literal("ab"), g.Token(v.special2)}));
  auto cg = MustCompile(g, v.vocab);
  Matcher m(cg);
  std::vector<uint32_t> mask = Mask(m, v.tokens.size());
  for (size_t t = 0; t < v.tokens.size(); ++t) EXPECT_EQ(MaskAllows(mask, static_cast<TokenId>(t)), static_cast<TokenId>(t) == v.special1) << t;
  EXPECT_FALSE(m.AcceptToken(v.special2).ok());
  ASSERT_TRUE(m.AcceptToken(v.special1).ok());
  EXPECT_EQ(m.ForcedBytes(), "ab");
  mask = Mask(m, v.tokens.size());
  EXPECT_FALSE(MaskAllows(mask, v.special1));
  EXPECT_FALSE(MaskAllows(mask, v.special2));
  ASSERT_TRUE(m.AcceptBytes("ab"));
  EXPECT_EQ(m.ForcedBytes(), "");  // a token comes next, not bytes
  mask = Mask(m, v.tokens.size());
  EXPECT_TRUE(MaskAllows(mask, v.special2));
  ASSERT_TRUE(m.AcceptToken(v.special2).ok());
  EXPECT_TRUE(m.IsTerminated());
  EXPECT_TRUE(MaskAllows(Mask(m, v.tokens.size()), v.eos));
}

TEST(Matcher, TokenIdOutsideTheVocabularyIsAnError) {
  SmallVocab v;
  Grammar g;
  RuleId root = g.AddRule("root");
  g.SetRoot(root);
  g.SetBody(root, g.Token(100000));
  auto r = Compile(g, v.vocab);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("100000"), std::string::npos);
}

TEST(Matcher, LeftRecursionIsAnErrorNamingTheRule) {
  SmallVocab v;
  Grammar g;
  RuleId expr = g.AddRule("expr"), term = g.AddRule("term"), ws = g.AddRule("ws");
  g.SetRoot(expr);
  g.SetBody(ws, g.Repeat(g.Byte(' '), 0, -1));
  // expr ::= ws term "+" "a" | "a" ; term ::= expr "b"   (expr -> ws? -> term -> expr)
  g.SetBody(expr, g.Alt({g.Seq({g.Ref(ws), g.Ref(term), g.Literal("+a")}), g.Byte('a')}));
  g.SetBody(term, g.Seq({g.Ref(expr), g.Byte('b')}));
  auto r = Compile(g, v.vocab);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("left-recursive"), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(r.status().message().find("'expr'") != std::string::npos ||
              r.status().message().find("'term'") != std::string::npos);
}

TEST(Matcher, RuleThatCanNeverMatchIsAnError) {
  SmallVocab v;
  Grammar g;
  RuleId root = g.AddRule("root"), loop = g.AddRule("forever");
  g.SetRoot(root);
  g.SetBody(root, g.Alt({g.Byte('a'), g.Seq({g.Byte('b'), g.Ref(loop)})}));
  g.SetBody(loop, g.Seq({g.Byte('c'), g.Ref(loop)}));
  auto r = Compile(g, v.vocab);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'forever' can never match"), std::string::npos) << r.status().ToString();
}

TEST(Matcher, TooManyStacksFailsTheStep) {
  SmallVocab v;
  Grammar g;
  RuleId root = g.AddRule("root");
  g.SetRoot(root);
  std::vector<NodeId> alts;
  for (int i = 0; i < 5; ++i) {
    RuleId r = g.AddRule("x" + std::to_string(i));  // recursive, so called, not inlined
    g.SetBody(r, g.Seq({g.Byte('a'), g.Optional(g.Ref(r))}));
    alts.push_back(g.Ref(r));
  }
  g.SetBody(root, g.Alt(alts));
  CompileOptions options;
  options.max_stacks = 3;
  auto cg = MustCompile(g, v.vocab, options);
  Matcher m(cg);
  Status st;
  Mask(m, v.tokens.size(), &st);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  options.max_stacks = 5;
  Matcher ok(MustCompile(g, v.vocab, options));
  Mask(ok, v.tokens.size());
  EXPECT_TRUE(ok.AcceptBytes("aaa"));
}

TEST(Matcher, ForcedBytesStopAtAChoiceOrTheEnd) {
  SmallVocab v;
  Grammar g;
  RuleId root = g.AddRule("root");
  g.SetRoot(root);
  g.SetBody(root, g.Seq({g.Literal("{\"name\": \""), g.Alt({g.Literal("ab"), g.Literal("ac")}), g.Literal("\"}")}));
  Matcher m(MustCompile(g, v.vocab));
  EXPECT_EQ(m.ForcedBytes(), "{\"name\": \"a");
  EXPECT_TRUE(m.AcceptBytes("{\"na"));
  EXPECT_EQ(m.ForcedBytes(), "me\": \"a");
  EXPECT_TRUE(m.AcceptBytes("me\": \"a"));
  EXPECT_EQ(m.ForcedBytes(), "");
  EXPECT_TRUE(m.AcceptBytes("c"));
  EXPECT_EQ(m.ForcedBytes(), "\"}");
  EXPECT_TRUE(m.AcceptBytes("\"}"));
  EXPECT_EQ(m.ForcedBytes(), "");
  EXPECT_TRUE(m.IsTerminated());
}

TEST(Matcher, CopiesAreIndependent) {
  auto vocab = TokenVocab::FromBytes({"[", "]", ",", "a", "[[", "]]", "],[", "a]", "</s>"}, {8}, {8});
  auto cg = MustCompile(NestedBrackets(), vocab);
  Matcher a(cg);
  ASSERT_TRUE(a.AcceptBytes("[["));
  Matcher b = a;
  std::vector<uint32_t> before = Mask(a, 9);
  ASSERT_TRUE(b.AcceptToken(7).ok());  // a]
  EXPECT_EQ(Mask(a, 9), before);
  EXPECT_NE(Mask(b, 9), before);
  Matcher c(cg);
  c = b;
  ASSERT_TRUE(c.AcceptBytes("]"));
  EXPECT_TRUE(c.IsTerminated());
  EXPECT_FALSE(b.CanEnd());
  Matcher moved = std::move(c);
  EXPECT_TRUE(moved.IsTerminated());
}

TEST(Matcher, RejectedTokenLeavesTheStateUnchanged) {
  auto vocab = TokenVocab::FromBytes({"[", "]", ",", "a", "[[", "]]", "],[", "a]", "</s>"}, {8}, {8});
  Matcher m(MustCompile(NestedBrackets(), vocab));
  ASSERT_TRUE(m.AcceptBytes("[a"));
  std::vector<uint32_t> before = Mask(m, 9);
  EXPECT_FALSE(m.AcceptToken(3).ok());  // a a
  EXPECT_FALSE(m.AcceptToken(8).ok());  // EOS before the end
  EXPECT_FALSE(m.AcceptBytes(",,"));
  EXPECT_EQ(Mask(m, 9), before);
}

}  // namespace
}  // namespace llmhost::grammar::matcher_test
