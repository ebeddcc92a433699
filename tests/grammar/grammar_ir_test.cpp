#include "grammar/grammar.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "util/utf8.h"

namespace llmhost::grammar::grammar_ir_test {
namespace {

// An independent reading of a node tree (no rule references): the set of
// positions where `node` can end when it starts at `from`.
std::set<size_t> Ends(const Grammar& g, NodeId id, std::string_view s, size_t from) {
  const Node& n = g.node(id);
  switch (n.kind) {
    case Node::Kind::kEmpty:
      return {from};
    case Node::Kind::kBytes: {
      if (from >= s.size()) return {};
      uint8_t b = static_cast<uint8_t>(s[from]);
      for (ByteRange r : n.ranges)
        if (b >= r.lo && b <= r.hi) return {from + 1};
      return {};
    }
    case Node::Kind::kSeq: {
      std::set<size_t> cur = {from};
      for (NodeId c : n.children) {
        std::set<size_t> next;
        for (size_t p : cur)
          for (size_t e : Ends(g, c, s, p)) next.insert(e);
        cur = std::move(next);
      }
      return cur;
    }
    case Node::Kind::kAlt: {
      std::set<size_t> out;
      for (NodeId c : n.children)
        for (size_t e : Ends(g, c, s, from)) out.insert(e);
      return out;
    }
    default:
      ADD_FAILURE() << "unexpected node kind";
      return {};
  }
}

bool Matches(const Grammar& g, NodeId id, std::string_view s) { return Ends(g, id, s, 0).count(s.size()) > 0; }

std::string Utf8(char32_t c) {
  std::string s;
  utf8::Append(&s, c);
  return s;
}

TEST(GrammarIr, BytesAreSortedAndMerged) {
  Grammar g;
  NodeId n = g.Bytes({{'x', 'z'}, {'a', 'c'}, {'d', 'f'}, {'b', 'b'}, {'9', '0'}});
  std::vector<ByteRange> want = {{'0', '9'}, {'a', 'f'}, {'x', 'z'}};
  EXPECT_EQ(g.node(n).ranges, want);
}

TEST(GrammarIr, LiteralIsASequenceOfBytes) {
  Grammar g;
  NodeId n = g.Literal("ab\xff");
  EXPECT_TRUE(Matches(g, n, "ab\xff"));
  EXPECT_FALSE(Matches(g, n, "ab"));
  EXPECT_EQ(g.node(g.Literal("")).kind, Node::Kind::kEmpty);
}

TEST(GrammarIr, CodepointClassMatchesExactlyItsCharacters) {
  Grammar g;
  std::vector<CodepointRange> set = {{'a', 'z'}, {0xE9, 0xE9}, {0x7F0, 0x812}, {0xD7F0, 0xE010},
                                     {0xFFF0, 0x10010}, {0x10FFF0, 0x10FFFF}};
  NodeId pos = g.Codepoints(set);
  NodeId neg = g.Codepoints(set, /*negate=*/true);
  auto in_set = [&](char32_t c) {
    for (auto r : set)
      if (c >= r.lo && c <= r.hi) return true;
    return false;
  };
  std::vector<char32_t> probes;
  for (char32_t c = 0; c < 0x900; ++c) probes.push_back(c);
  for (char32_t c = 0xD700; c < 0xE100; ++c) probes.push_back(c);
  for (char32_t c = 0xFF00; c < 0x10100; ++c) probes.push_back(c);
  for (char32_t c = 0x10FF00; c <= 0x10FFFF; ++c) probes.push_back(c);
  std::mt19937 rng(1);
  for (int i = 0; i < 5000; ++i) probes.push_back(rng() % 0x110000);
  for (char32_t c : probes) {
    bool surrogate = c >= 0xD800 && c <= 0xDFFF;
    if (surrogate) continue;
    std::string s = Utf8(c);
    EXPECT_EQ(Matches(g, pos, s), in_set(c)) << std::hex << static_cast<uint32_t>(c);
    EXPECT_EQ(Matches(g, neg, s), !in_set(c)) << std::hex << static_cast<uint32_t>(c);
  }
}

TEST(GrammarIr, NegatedClassNeverMatchesInvalidUtf8) {
  Grammar g;
  NodeId any = g.Codepoints({}, /*negate=*/true);
  std::mt19937 rng(2);
  int valid_seen = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string s(1 + rng() % 4, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 3 == 0 ? 0x80 + rng() % 64 : rng() % 256);
    size_t pos = 0;
    bool one_char = utf8::IsValid(s) && (utf8::DecodeOne(s, &pos), pos == s.size());
    valid_seen += one_char;
    EXPECT_EQ(Matches(g, any, s), one_char) << ::testing::PrintToString(s);
  }
  EXPECT_GT(valid_seen, 1000);
  // Encoded surrogates (ED A0..BF xx) are not scalar values.
  EXPECT_FALSE(Matches(g, any, "\xED\xA0\x80"));
  EXPECT_TRUE(Matches(g, any, "\xED\x9F\xBF"));
}

TEST(GrammarIr, EmptyClassMatchesNothing) {
  Grammar g;
  NodeId none = g.Codepoints({}, /*negate=*/false);
  EXPECT_FALSE(Matches(g, none, ""));
  EXPECT_FALSE(Matches(g, none, "a"));
}

TEST(GrammarIr, ValidateNamesTheProblem) {
  Grammar g;
  EXPECT_NE(g.Validate().message().find("no root"), std::string::npos);
  RuleId r = g.AddRule("start");
  g.SetRoot(r);
  EXPECT_NE(g.Validate().message().find("'start' has no body"), std::string::npos);
  g.SetBody(r, g.Repeat(g.Byte('a'), 2, -1));
  EXPECT_TRUE(g.Validate().ok());
  EXPECT_EQ(g.FindRule("start"), r);
  EXPECT_EQ(g.FindRule("other"), std::nullopt);
  for (auto [min, max] : {std::pair{3, 2}, {-1, 4}, {0, kMaxRepeat + 1}, {kMaxRepeat + 1, -1}}) {
    Grammar bad;
    RuleId b = bad.AddRule("r");
    bad.SetRoot(b);
    bad.SetBody(b, bad.Repeat(bad.Byte('a'), min, max));
    EXPECT_NE(bad.Validate().message().find("out of range"), std::string::npos) << min << "," << max;
  }
}

TEST(GrammarIr, TooManyNodesIsAnErrorNotACrash) {
  Grammar g;
  RuleId r = g.AddRule("big");
  g.SetRoot(r);
  NodeId last = -1;
  for (size_t i = 0; i < kMaxNodes + 10; ++i) last = g.Byte('a');
  g.SetBody(r, last);
  EXPECT_LE(g.node_count(), kMaxNodes);
  EXPECT_NE(g.Validate().message().find("nodes"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::grammar::grammar_ir_test
