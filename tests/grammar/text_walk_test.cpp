// The fast parts of the mask walk against brute force: the per-vocabulary
// text sets (TextTokens) against reading each token byte by byte, and masks
// through loops and bounded runs of text, of letters, of an accepting loop
// ([a-z]+ ending a rule) and of a JSON string, against accepting each token
// on a copy of the matcher. One vocabulary serves every grammar, so masks
// also come from shared cache entries.
#include <gtest/gtest.h>

#include <random>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/shared_mask_cache.h"
#include "grammar/text_tokens.h"
#include "grammar/token_trie.h"

namespace llmhost::grammar::text_walk_test {
namespace {

// Tokens over bytes that matter to text: letters, digits, space, " and \,
// controls, DEL, whole and partial UTF-8 characters, lone continuations.
std::vector<std::string> TextVocabulary(uint32_t seed, int n) {
  static const char* kPieces[] = {"a",
                                  "b",
                                  "z",
                                  "A",
                                  "Q",
                                  "0",
                                  "9",
                                  " ",
                                  "_",
                                  "-",
                                  ".",
                                  ",",
                                  "/",
                                  "!",
                                  "{",
                                  "\"",
                                  "\\",
                                  "\n",
                                  "\t",
                                  "\x7F",
                                  "\xC3\xA9",
                                  "\xE2\x82\xAC",
                                  "\xF0\x9D\x84\x9E",
                                  "\xC3",
                                  "\xE2\x82",
                                  "\x80",
                                  "\xA9",
                                  "\xED\xA0\x80",
                                  "\xC0\xAF"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (const char* p : kPieces) out.push_back(p);
  while (static_cast<int>(out.size()) < n) {
    std::string t;
    for (int k = 0, len = 1 + rng() % 5; k < len; ++k) t += kPieces[rng() % std::size(kPieces)];
    out.push_back(t);
  }
  out.push_back("</s>");
  return out;
}

// Whether `bytes` read from position p stay text (TextTokens::Next).
bool IsText(uint8_t p, std::string_view bytes) {
  for (char c : bytes) {
    p = TextTokens::Next(p, static_cast<uint8_t>(c));
    if (p == TextTokens::kDead) return false;
  }
  return true;
}

TEST(TextTokens, AutomatonReadsStrictUtf8WithoutQuotesBackslashesOrControls) {
  EXPECT_TRUE(IsText(TextTokens::kBoundary, "plain text, digits 0-9 / punctuation!"));
  EXPECT_TRUE(IsText(TextTokens::kBoundary, "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E"));
  EXPECT_TRUE(IsText(TextTokens::kBoundary, "ends inside \xE2\x82"));  // the rest may follow
  for (const char* bad : {"\"", "\\", "\n", "\x7F", "\x80", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90", "\xF5"})
    EXPECT_FALSE(IsText(TextTokens::kBoundary, bad)) << bad;
  EXPECT_EQ(TextTokens::KindOf('q'), TextTokens::kLower);
  EXPECT_EQ(TextTokens::KindOf('7'), TextTokens::kDigit);
  EXPECT_EQ(TextTokens::KindOf(0xE2), TextTokens::kNonAscii);
  EXPECT_EQ(TextTokens::KindOf('"'), TextTokens::kKinds);
}

TEST(TextTokens, PerNodeSetsMatchEveryTokenBelow) {
  std::vector<std::string> tokens = TextVocabulary(3, 400);
  auto vocab = TokenVocab::FromBytes(tokens, {}, {static_cast<TokenId>(tokens.size() - 1)});
  const TokenTrie& trie = vocab->trie();
  const TextTokens& text = vocab->text_tokens();
  std::span<const TokenTrie::Node> nodes = trie.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const TokenTrie::Node& n = nodes[i];
    uint8_t below = 0xFF;
    int height = 0;
    TextTokens::KindSet kinds = 0;
    for (int32_t r = n.rank_begin; r < n.rank_end; ++r) {
      std::string_view rest = vocab->bytes(trie.id_of_rank(r)).substr(n.depth);
      height = std::max<int>(height, static_cast<int>(rest.size()));
      for (int p = 0; p < TextTokens::kPositions; ++p)
        if (!IsText(static_cast<uint8_t>(p), rest)) below &= static_cast<uint8_t>(~(1u << p));
      for (char c : rest)
        if (TextTokens::KindOf(static_cast<uint8_t>(c)) != TextTokens::kKinds)
          kinds |= static_cast<TextTokens::KindSet>(1u << TextTokens::KindOf(static_cast<uint8_t>(c)));
    }
    ASSERT_EQ(text.below(static_cast<int32_t>(i)), below) << "node " << i;
    ASSERT_EQ(text.height(static_cast<int32_t>(i)), height) << "node " << i;
    ASSERT_EQ(text.kinds(static_cast<int32_t>(i)), kinds) << "node " << i;
  }
  for (size_t id = 0; id + 1 < tokens.size(); ++id)
    EXPECT_EQ(MaskAllows(text.from_boundary(), static_cast<TokenId>(id)), IsText(TextTokens::kBoundary, tokens[id]))
        << "token " << id;
}

// Walks each grammar along random allowed tokens; at every step the mask
// must allow exactly the tokens a copy of the matcher accepts.
void CheckMasksAlongRandomWalks(const char* gbnf, std::shared_ptr<const TokenVocab> vocab, uint32_t seed) {
  SCOPED_TRACE(gbnf);
  Grammar g;
  auto root = AddGbnf(g, gbnf, vocab.get());
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  g.SetRoot(*root);
  auto cg = Compile(g, vocab);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  std::mt19937 rng(seed);
  std::vector<uint32_t> mask(MaskWords(vocab->size()));
  const TokenId eos = vocab->eos_ids()[0];
  for (int walk = 0; walk < 4; ++walk) {
    Matcher m(*cg);
    std::string text;
    for (int step = 0; step < 10 && !m.IsTerminated(); ++step) {
      Status st = m.FillNextTokenMask(mask);
      ASSERT_TRUE(st.ok()) << "after '" << text << "': " << st.ToString();
      std::vector<TokenId> allowed;
      for (size_t t = 0; t < vocab->size(); ++t) {
        TokenId id = static_cast<TokenId>(t);
        bool expected = id == eos ? m.CanEnd() : Matcher(m).AcceptBytes(vocab->bytes(id));
        ASSERT_EQ(MaskAllows(mask, id), expected) << "after '" << text << "' token '" << vocab->bytes(id) << "'";
        if (expected && id != eos) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      TokenId pick = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.AcceptToken(pick).ok());
      text += vocab->bytes(pick);
    }
  }
}

TEST(TextWalk, MasksThroughTextLoopsMatchAcceptingEachToken) {
  std::vector<std::string> tokens = TextVocabulary(5, 600);
  auto vocab = TokenVocab::FromBytes(tokens, {}, {static_cast<TokenId>(tokens.size() - 1)});
  const char* grammars[] = {
      R"(root ::= "\"" [^"]* "\"")",
      R"(root ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\"" " ")",
      R"(root ::= [a-z]+)",
      R"(root ::= item ( "," item )*
item ::= [a-z]+ | [0-9]+)",
      R"(root ::= "\"" [^"\\\x00-\x1F]{0,6} "\"")",
      R"(root ::= "\"" [^"\\\x00-\x1F]{3,5} "\"" [a-z]*)",
      R"(root ::= ( [a-zA-Z_] [a-zA-Z0-9_]* "." )+)",
      R"(root ::= "{" [^}]* "}" [^{]*)",
  };
  uint32_t seed = 1;
  for (const char* g : grammars) CheckMasksAlongRandomWalks(g, vocab, seed++);
  // Shared entries were used (copies of one loop in a DFA share an entry).
  EXPECT_GT(vocab->shared_masks().stats().hits, 0u);
}

}  // namespace
}  // namespace llmhost::grammar::text_walk_test
