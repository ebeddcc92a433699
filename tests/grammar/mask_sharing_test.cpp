// Mask-cache entries shared across grammars and across equivalent states
// (grammar/local_automaton_key.h, grammar/shared_mask_cache.h).
#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/local_automaton_key.h"
#include "grammar/matcher.h"
#include "grammar/shared_mask_cache.h"
#include "grammar/token_walk.h"
#include "grammar_test_util.h"

namespace llmhost::grammar::mask_sharing_test {
namespace {

std::shared_ptr<const CompiledGrammar> CompileGbnf(const char* text, std::shared_ptr<const TokenVocab> vocab) {
  Grammar g;
  auto root = AddGbnf(g, text, vocab.get());
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  g.SetRoot(*root);
  auto cg = Compile(g, vocab);
  EXPECT_TRUE(cg.ok()) << cg.status().ToString();
  return *cg;
}

// The state after `bytes` from the start, within the root rule.
int32_t After(const CompiledGrammar& g, std::string_view bytes) {
  int32_t s = g.start();
  for (char c : bytes) s = g.NextOnByte(s, static_cast<uint8_t>(c));
  return s;
}

TEST(LocalAutomatonKey, CopiesOfOneLoopShareAKey) {
  testing::SmallVocab v;
  auto cg = CompileGbnf(R"(root ::= "\"" [^"]* "\"")", v.vocab);
  int32_t open = After(*cg, "\""), after_a = After(*cg, "\"a"), after_e = After(*cg, "\"\xC3\xA9"),
          after_euro = After(*cg, "\"\xE2\x82\xAC");
  ASSERT_GE(after_euro, 0);
  auto key = LocalAutomatonKey(*cg, open);
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(LocalAutomatonKey(*cg, after_a), key);
  EXPECT_EQ(LocalAutomatonKey(*cg, after_e), key);
  EXPECT_EQ(LocalAutomatonKey(*cg, after_euro), key);
  EXPECT_NE(LocalAutomatonKey(*cg, cg->start()), key);           // before the quote
  EXPECT_NE(LocalAutomatonKey(*cg, After(*cg, "\"\xE2")), key);  // inside a character
}

TEST(LocalAutomatonKey, SameRuleInDifferentGrammarsSameKeyOtherwiseDifferent) {
  testing::SmallVocab v;
  const char* kString = "\nstr ::= \"'\" [abc]* \"'\"";
  auto list = CompileGbnf((std::string("root ::= \"[\" str (\",\" str)* \"]\"") + kString).c_str(), v.vocab);
  auto pair = CompileGbnf((std::string("root ::= str \":\" str") + kString).c_str(), v.vocab);
  auto other = CompileGbnf("root ::= \"[\" str \"]\"\nstr ::= \"'\" [ab]* \"'\"", v.vocab);
  // The string rule's content: called from the root, so after "'" in its own rule.
  auto content = [](const CompiledGrammar& g) {
    const CompiledGrammar::CallEdge& call =
        g.call_edges(g.start()).empty() ? g.call_edges(g.NextOnByte(g.start(), '['))[0] : g.call_edges(g.start())[0];
    return g.NextOnByte(call.callee_start, '\'');
  };
  auto key = LocalAutomatonKey(*list, content(*list));
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(LocalAutomatonKey(*pair, content(*pair)), key);
  EXPECT_NE(LocalAutomatonKey(*other, content(*other)), key);  // [ab]*: another automaton
}

TEST(LocalAutomatonKey, NoKeyPastTheStateBound) {
  testing::SmallVocab v;
  std::string text(kMaxKeyStates + 10, 'a');
  auto cg = CompileGbnf(("root ::= \"" + text + "\"").c_str(), v.vocab);
  EXPECT_FALSE(LocalAutomatonKey(*cg, cg->start()).has_value());
  EXPECT_TRUE(LocalAutomatonKey(*cg, After(*cg, text.substr(0, 60))).has_value());  // what is left is small
}

TEST(SharedMasks, SecondSchemaTakesTheStringEntriesOfTheFirst) {
  testing::SmallVocab v;
  auto compile_schema = [&](const char* schema) {
    Grammar g;
    auto root = AddJsonSchema(g, nlohmann::ordered_json::parse(schema));
    EXPECT_TRUE(root.ok()) << root.status().ToString();
    g.SetRoot(*root);
    return *Compile(g, v.vocab);
  };
  auto first = compile_schema(R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})");
  auto second = compile_schema(R"({"type": "array", "items": {"type": "string"}})");
  std::vector<uint32_t> mask(MaskWords(v.vocab->size()));
  Matcher m1(first);
  ASSERT_TRUE(m1.AcceptBytes("{\"a\":\"ab"));
  ASSERT_TRUE(m1.FillNextTokenMask(mask).ok());
  SharedMaskCacheStats before = v.vocab->shared_masks().stats();
  Matcher m2(second);
  ASSERT_TRUE(m2.AcceptBytes("[\"c"));
  ASSERT_TRUE(m2.FillNextTokenMask(mask).ok());
  EXPECT_GT(v.vocab->shared_masks().stats().hits, before.hits);
  for (size_t t = 0; t < v.tokens.size(); ++t) {
    TokenId id = static_cast<TokenId>(t);
    bool expected = !v.vocab->is_special(id) && !v.tokens[t].empty() && Matcher(m2).AcceptBytes(v.vocab->bytes(id));
    EXPECT_EQ(MaskAllows(mask, id), expected) << "token '" << v.tokens[t] << "'";
  }
}

std::shared_ptr<const MaskEntry> EntryOfIds(std::vector<int32_t> ids) {
  auto e = std::make_shared<MaskEntry>();
  e->ids = std::move(ids);
  return e;
}

TEST(SharedMaskCache, KeepsTheFirstOfConcurrentInsertsAndEvictsLeastRecentlyUsed) {
  SharedMaskCache cache;
  auto a = EntryOfIds({1, 2, 3});
  EXPECT_EQ(cache.Find({7}), nullptr);
  EXPECT_EQ(cache.Insert({7}, a), a);
  EXPECT_EQ(cache.Insert({7}, EntryOfIds({4})), a);  // a second miss of the same key
  EXPECT_EQ(cache.Find({7}), a);
  SharedMaskCacheStats st = cache.stats();
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.entries, 1u);
  size_t one = st.bytes;

  // Room for two entries of this size: the least recently used goes.
  cache.set_capacity(2 * one + one / 2);
  auto b = EntryOfIds({4, 5, 6}), c = EntryOfIds({7, 8, 9});
  cache.Insert({8}, b);
  EXPECT_EQ(cache.Find({7}), a);  // 8 is now the older
  cache.Insert({9}, c);
  EXPECT_EQ(cache.Find({8}), nullptr);
  EXPECT_EQ(cache.Find({7}), a);
  EXPECT_EQ(cache.Find({9}), c);
  EXPECT_LE(cache.stats().bytes, 2 * one + one / 2);
  EXPECT_EQ(b->ids.size(), 3u);  // an evicted entry lives on where it is held
  cache.set_capacity(0);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().bytes, 0u);
}

}  // namespace
}  // namespace llmhost::grammar::mask_sharing_test
