#include "grammar/token_vocab.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar/token_trie.h"
#include "test_util.h"
#include "util/utf8.h"

namespace llmhost::grammar::token_vocab_test {
namespace {

TEST(TokenVocab, FromBytesKeepsSpecialTokensOutOfTheTrie) {
  auto v = TokenVocab::FromBytes({"ab", "a", "<tool>", "", "b", "ab", "</s>"}, {2, 6}, {6});
  EXPECT_EQ(v->size(), 7u);
  EXPECT_EQ(v->bytes(0), "ab");
  EXPECT_EQ(v->bytes(2), "");
  EXPECT_TRUE(v->is_special(2));
  EXPECT_FALSE(v->is_special(1));
  EXPECT_TRUE(v->is_eos(6));
  EXPECT_FALSE(v->is_eos(0));
  EXPECT_EQ(v->SpecialId("<tool>"), 2);
  EXPECT_EQ(v->SpecialId("ab"), -1);
  const TokenTrie& trie = v->trie();
  ASSERT_EQ(trie.token_count(), 4u);  // a, ab, ab, b: not <tool>, "" or </s>
  EXPECT_EQ(trie.rank_of_id(2), -1);
  EXPECT_EQ(trie.rank_of_id(3), -1);
  // Sorted by bytes; duplicates end at one node.
  EXPECT_EQ(trie.id_of_rank(0), 1);
  EXPECT_EQ(trie.node_of_rank(1), trie.node_of_rank(2));
  const auto& ab = trie.nodes()[trie.node_of_rank(1)];
  EXPECT_EQ(ab.depth, 2);
  EXPECT_EQ(ab.rank_here_end - ab.rank_begin, 2);
  const auto& a = trie.nodes()[ab.parent];
  EXPECT_EQ(a.rank_begin, 0);
  EXPECT_EQ(a.rank_end, 3);
  EXPECT_EQ(trie.nodes()[0].rank_end, 4);
  EXPECT_EQ(a.subtree_end, trie.node_of_rank(3));  // the node of "b" follows a's subtree
}

// Real tokenizers: the bytes of a run of tokens are what Decode gives,
// where Decode is byte-faithful (valid UTF-8, after a plain first token so
// that a leading-space Strip does not apply).
class RealVocab : public ::testing::TestWithParam<const char*> {};

TEST_P(RealVocab, TokenBytesConcatenateToTheDecodedText) {
  SKIP_IF_NO_SHARED();
  std::string path = ::llmhost::testing::SharedDir() + "/reference/tokenizers/" + GetParam();
  auto tok = Tokenizer::FromPath(path);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const Tokenizer& t = **tok;
  auto vocab = TokenVocab::FromTokenizer(t, {});
  ASSERT_EQ(vocab->size(), t.VocabSize());
  size_t specials = 0;
  for (size_t id = 0; id < vocab->size(); ++id) {
    if (t.IsSpecial(static_cast<TokenId>(id))) {
      ++specials;
      EXPECT_TRUE(vocab->is_special(static_cast<TokenId>(id)));
      EXPECT_EQ(vocab->bytes(static_cast<TokenId>(id)), "");
    }
  }
  EXPECT_GT(specials, 0u);
  EXPECT_GT(vocab->trie().token_count(), vocab->size() * 9 / 10);

  std::vector<TokenId> normal;
  for (size_t id = 0; id < vocab->size(); ++id)
    if (!vocab->is_special(static_cast<TokenId>(id)) && !vocab->bytes(static_cast<TokenId>(id)).empty())
      normal.push_back(static_cast<TokenId>(id));
  std::optional<TokenId> anchor = t.TokenToId("a");
  ASSERT_TRUE(anchor.has_value());
  std::mt19937 rng(5);
  int compared = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<TokenId> ids = {*anchor};
    std::string bytes = "a";
    for (int k = 0, n = 1 + rng() % 6; k < n; ++k) {
      TokenId id = normal[rng() % normal.size()];
      ids.push_back(id);
      bytes += vocab->bytes(id);
    }
    if (!utf8::IsValid(bytes)) continue;
    ++compared;
    EXPECT_EQ(bytes, t.Decode(ids, /*skip_special=*/false));
  }
  EXPECT_GT(compared, 1000);
  // Text encoded and decoded back: the same bytes.
  for (std::string text : {"Hello, world! {\"a\": [1, 2.5e-3, null]}", "  indented\n\ttabs", "naïve café — ☃ 日本語 🎉"}) {
    std::vector<TokenId> ids = t.Encode(text, /*add_special=*/false);
    std::string bytes;
    for (TokenId id : ids) bytes += vocab->bytes(id);
    std::string decoded = t.Decode(ids, false);
    if (GetParam() == std::string("tok_llama2.json")) {
      EXPECT_EQ(bytes, " " + decoded) << text;  // SentencePiece's prefix space
    } else {
      EXPECT_EQ(bytes, decoded) << text;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, RealVocab,
                         ::testing::Values("tok_llama3.json", "tok_qwen3.json", "tok_llama2.json"));

}  // namespace
}  // namespace llmhost::grammar::token_vocab_test
