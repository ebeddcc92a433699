// Masks on a real 128K vocabulary against accepting each token's bytes on a
// copy, along a JSON text: inside strings (most tokens cached as accepted),
// at closing quotes (tokens that leave the string rule and go on in the
// caller), in nested objects and arrays.
#include <gtest/gtest.h>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::grammar::real_vocab_mask_test {
namespace {

TEST(RealVocabMask, JsonMasksMatchAcceptingEachToken) {
  SKIP_IF_NO_SHARED();
  auto tok = Tokenizer::FromPath(::llmhost::testing::SharedDir() + "/reference/tokenizers/tok_llama3.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  TokenId eot = *(*tok)->TokenToId("<|eot_id|>");
  auto vocab = TokenVocab::FromTokenizer(**tok, {eot});
  Grammar g;
  // The JSON grammar llama.cpp users pass, as GBNF (shared with bench/grammar_mask_bench).
  auto json = ReadFileToString(::llmhost::testing::TestDataDir() + "/grammar/json.gbnf");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  auto root = AddGbnf(g, *json, vocab.get());
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  g.SetRoot(*root);
  auto cg = Compile(g, vocab);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();

  std::string text = R"({"name": "Ad\u00e9la \"A\"", "tags": [1, -2.5e3, {"x": null}], "ok": true})";
  std::vector<TokenId> ids = (*tok)->Encode(text, /*add_special=*/false);
  Matcher m(*cg);
  std::vector<uint32_t> mask(MaskWords(vocab->size()));
  int checked = 0;
  for (size_t step = 0; step <= ids.size(); ++step) {
    ASSERT_TRUE(m.FillNextTokenMask(mask).ok());
    // Every token at a few steps (the rest only for the token taken).
    if (step % 5 == 0 || step == ids.size()) {
      ++checked;
      for (size_t t = 0; t < vocab->size(); ++t) {
        TokenId id = static_cast<TokenId>(t);
        bool expected = id == eot ? m.CanEnd() : !vocab->is_special(id) && !vocab->bytes(id).empty() && Matcher(m).AcceptBytes(vocab->bytes(id));
        ASSERT_EQ(MaskAllows(mask, id), expected) << "step " << step << " token " << t << " '" << vocab->bytes(id) << "'";
      }
    }
    if (step == ids.size()) break;
    ASSERT_TRUE(MaskAllows(mask, ids[step])) << "step " << step << " '" << vocab->bytes(ids[step]) << "'";
    ASSERT_TRUE(m.AcceptToken(ids[step]).ok());
  }
  EXPECT_GT(checked, 3);
  EXPECT_TRUE(m.CanEnd());
  ASSERT_TRUE(m.AcceptToken(eot).ok());
  EXPECT_TRUE(m.IsTerminated());
}

}  // namespace
}  // namespace llmhost::grammar::real_vocab_mask_test
