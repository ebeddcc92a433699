// Prefix index bookkeeping (keys, LRU free list, revival, eviction on reuse,
// dedupe, exact hits, stats) and, with real fixture models, that a prompt
// run on top of cached blocks gives the logits and greedy ids of a cold run.
#include <gtest/gtest.h>

#include <numeric>

#include "backend/cpu/cpu_backend.h"
#include "kv/fingerprint.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "model/model_test_util.h"

namespace llmhost::prefix_cache_test {
namespace {

constexpr int64_t kBs = 4;

std::vector<int32_t> Ids(int32_t from, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

Sha256Digest Fp(uint8_t b) {
  Sha256Digest d{};
  d.fill(b);
  return d;
}

// Stores `n` more positions of seq (as Forward would: reserve, then length).
void Fill(KvCache& kv, CachedSequence* s, int64_t new_length) {
  ASSERT_TRUE(kv.Reserve(&s->kv, new_length).ok());
  s->kv.length = new_length;
}

TEST(BlockAllocatorLruTest, LeastRecentlyFreedFirstReviveAndHook) {
  BlockAllocator a(4);
  std::vector<int32_t> handed;
  a.set_allocate_hook([&](int32_t id) { handed.push_back(id); });
  EXPECT_EQ(a.Allocate(), 0);
  EXPECT_EQ(a.Allocate(), 1);
  EXPECT_EQ(a.Allocate(), 2);
  a.Unref(1);
  a.Unref(0);
  EXPECT_EQ(a.free_blocks(), 3);  // 3 (never used), 1, 0: in that order
  // Reviving a free block takes it off the list without the hook.
  a.Ref(1);
  EXPECT_EQ(a.refcount(1), 1);
  EXPECT_EQ(a.free_blocks(), 2);
  EXPECT_EQ(a.Allocate(), 3);
  EXPECT_EQ(a.Allocate(), 0);
  EXPECT_FALSE(a.Allocate().has_value());
  EXPECT_EQ(handed, (std::vector<int32_t>{0, 1, 2, 3, 0}));
  a.Unref(2);
  a.Unref(1);
  a.Unref(0);
  EXPECT_EQ(a.Allocate(), 2);
  EXPECT_EQ(a.Allocate(), 1);
  EXPECT_EQ(a.Allocate(), 0);
}

class PrefixCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = KvCache::Create(&backend_, 1, 2, kBs, 8);
    ASSERT_TRUE(c.ok());
    kv_ = std::move(c).value();
    pc_ = std::make_unique<PrefixCache>(kv_.get(), Fp(1));
  }
  CpuBackend backend_{nullptr};
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<PrefixCache> pc_;
};

TEST_F(PrefixCacheTest, KeysChainOverTheWholePrefix) {
  CachedSequence a, b, c;
  a.tokens = Ids(0, 10);  // two full blocks, two tokens over
  b.tokens = Ids(0, 10);
  b.tokens[1] = 99;       // differs in block 0: every later key differs
  c.tokens = Ids(0, 8);
  pc_->ExtendKeys(&a);
  pc_->ExtendKeys(&b);
  pc_->ExtendKeys(&c);
  ASSERT_EQ(a.keys.size(), 2u);
  EXPECT_NE(a.keys[0], b.keys[0]);
  EXPECT_NE(a.keys[1], b.keys[1]);
  EXPECT_EQ(a.keys, c.keys);
  EXPECT_NE(a.keys[0], a.keys[1]);
  // Another fingerprint, other keys.
  auto kv2 = KvCache::Create(&backend_, 1, 2, kBs, 2);
  PrefixCache other(kv2->get(), Fp(2));
  CachedSequence d;
  d.tokens = Ids(0, 10);
  other.ExtendKeys(&d);
  EXPECT_NE(d.keys[0], a.keys[0]);
}

TEST_F(PrefixCacheTest, ReleasedBlocksStayFindableUntilReused) {
  CachedSequence a;
  a.tokens = Ids(0, 10);
  EXPECT_EQ(pc_->Acquire(&a), 0);
  Fill(*kv_, &a, 10);
  pc_->Publish(&a);
  EXPECT_EQ(a.published, 2u);  // the partial third block is not indexed
  EXPECT_EQ(pc_->stats().blocks_indexed, 2);
  const std::vector<int32_t> table = a.kv.block_table;
  pc_->Release(&a);
  PrefixCacheStats st = pc_->stats();
  EXPECT_EQ(st.blocks_used, 0);
  EXPECT_EQ(st.blocks_free, 8);
  EXPECT_EQ(st.blocks_cached, 2);

  // A prompt sharing 9 tokens: both full blocks are revived.
  CachedSequence b;
  b.tokens = Ids(0, 9);
  EXPECT_EQ(pc_->Acquire(&b), 8);
  EXPECT_EQ(b.kv.block_table, std::vector<int32_t>(table.begin(), table.begin() + 2));
  EXPECT_EQ(kv_->allocator().refcount(table[0]), 1);
  pc_->RecordLookup(b);
  st = pc_->stats();
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.cached_tokens, 8u);
  EXPECT_EQ(st.blocks_used, 2);
  EXPECT_EQ(st.blocks_cached, 0);
  pc_->Release(&b);

  // A prompt differing in block 1 finds block 0 only.
  CachedSequence c;
  c.tokens = Ids(0, 12);
  c.tokens[5] = 500;
  EXPECT_EQ(pc_->Acquire(&c), 4);
  pc_->Release(&c);

  // Allocating every block hands out the cached ones last (LRU) and then
  // evicts their keys.
  CachedSequence big;
  big.tokens = Ids(1000, 32);
  Fill(*kv_, &big, 24);  // 6 blocks: the 6 never-cached ones come first
  EXPECT_EQ(pc_->stats().blocks_cached, 2);
  EXPECT_EQ(pc_->CachedPrefixBlocks(Ids(0, 8)), 2);
  Fill(*kv_, &big, 28);  // the 7th: the least recently freed cached block
  EXPECT_EQ(pc_->stats().evictions, 1u);
  EXPECT_EQ(pc_->stats().blocks_cached, 1);
  pc_->Release(&big);
  EXPECT_EQ(kv_->allocator().free_blocks(), 8);
}

TEST_F(PrefixCacheTest, ExactHitRecomputesTheLastTokenAndCopiesOnWrite) {
  CachedSequence a;
  a.tokens = Ids(0, 8);
  pc_->Acquire(&a);
  Fill(*kv_, &a, 8);
  pc_->Publish(&a);
  // While a still holds them, b asks for exactly the same 8 tokens.
  CachedSequence b;
  b.tokens = Ids(0, 8);
  EXPECT_EQ(pc_->Acquire(&b), 7);  // the last token runs again for its logits
  EXPECT_EQ(b.kv.block_table, a.kv.block_table);
  // Writing position 7 into the shared block copies it first.
  EXPECT_EQ(kv_->BlocksNeeded(b.kv, 8), 1);
  Fill(*kv_, &b, 8);
  EXPECT_EQ(b.kv.block_table[0], a.kv.block_table[0]);
  EXPECT_NE(b.kv.block_table[1], a.kv.block_table[1]);
  // Publishing b's copy does not displace a's indexed block (same key).
  pc_->Publish(&b);
  EXPECT_EQ(pc_->stats().blocks_indexed, 2);
  const std::vector<int32_t> a_table = a.kv.block_table;
  pc_->Release(&a);
  pc_->Release(&b);
  EXPECT_EQ(pc_->stats().blocks_cached, 2);
  CachedSequence c;
  c.tokens = Ids(0, 8);
  pc_->Acquire(&c);
  EXPECT_EQ(c.kv.block_table, a_table);  // a's indexed blocks, not b's copy
  EXPECT_EQ(pc_->CachedPrefixBlocks(c.tokens), 2);
  pc_->Release(&c);
  pc_->Clear();
  EXPECT_EQ(pc_->CachedPrefixBlocks(Ids(0, 8)), 0);
  EXPECT_EQ(pc_->stats().blocks_indexed, 0);
}

// ---- With a real model: reuse equals a cold run. ----

struct Loaded {
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<Model> model;
};

bool LoadFixture(const std::string& name, Loaded* l) {
  const std::string path = testing::ModelsRoot() + "/" + name;
  if (!FileExists(path)) return false;
  l->backend = std::make_unique<CpuBackend>(&ThreadPool::Default(), Precision::kFast);
  auto m = Model::Load(path, l->backend.get());
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return false;
  l->model = std::move(m).value();
  return true;
}

std::vector<int32_t> Prompt(int64_t vocab, int n, uint32_t seed) {
  std::vector<int32_t> v;
  uint32_t x = seed;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v.push_back(static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab - 16)) + 3);
  }
  return v;
}

// Runs seq's pending tokens (in one item) then `n_gen` greedy tokens;
// returns the logits row before each generated token, and the ids.
struct GreedyRun {
  std::vector<std::vector<float>> rows;
  std::vector<int32_t> ids;
};
GreedyRun Continue(Model& m, KvCache& kv, PrefixCache* pc, CachedSequence* s, int n_gen) {
  GreedyRun r;
  ForwardOutput out;
  for (int g = 0; g <= n_gen; ++g) {
    const auto pending = std::span<const int32_t>(s->tokens).subspan(static_cast<size_t>(s->kv.length));
    ForwardItem it{&s->kv, pending, LogitsRows::kLast};
    Status st = m.Forward({&it, 1}, kv, &out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return r;
    if (pc) pc->Publish(s);
    r.rows.emplace_back(out.Row(0, 0), out.Row(0, 0) + out.vocab);
    if (g == n_gen) break;
    const int32_t id = testing::ArgMax(out.Row(0, 0), out.vocab);
    r.ids.push_back(id);
    s->tokens.push_back(id);
  }
  return r;
}

class PrefixReuseTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PrefixReuseTest, WarmRunMatchesColdRun) {
  Loaded l;
  if (!LoadFixture(GetParam(), &l)) GTEST_SKIP() << GetParam();
  Model& m = *l.model;
  const int64_t bs = 16;
  auto fp = SampledModelFingerprint(m, bs);
  ASSERT_TRUE(fp.ok()) << fp.status().ToString();
  const std::vector<int32_t> shared = Prompt(m.vocab_size(), 40, 7);  // 2.5 blocks
  std::vector<int32_t> prompt = shared;
  for (int32_t t : Prompt(m.vocab_size(), 13, 99)) prompt.push_back(t);

  // Cold: a cache of its own, no index.
  auto cold_kv = m.CreateKvCache(16, bs);
  ASSERT_TRUE(cold_kv.ok());
  CachedSequence cold;
  cold.tokens = prompt;
  const GreedyRun ref = Continue(m, **cold_kv, nullptr, &cold, 12);

  auto kv = m.CreateKvCache(16, bs);
  ASSERT_TRUE(kv.ok());
  PrefixCache pc(kv->get(), *fp);
  // An earlier request with the shared start (and another tail), finished.
  CachedSequence first;
  first.tokens = shared;
  first.tokens.push_back(5);
  pc.Acquire(&first);
  Continue(m, **kv, &pc, &first, 3);
  pc.Release(&first);

  CachedSequence warm;
  warm.tokens = prompt;
  EXPECT_EQ(pc.Acquire(&warm), 32);  // two full blocks of the shared start
  const GreedyRun got = Continue(m, **kv, &pc, &warm, 12);
  ASSERT_EQ(got.rows.size(), ref.rows.size());
  EXPECT_EQ(got.ids, ref.ids);
  for (size_t i = 0; i < ref.rows.size(); ++i) {
    EXPECT_LE(testing::RowRelError(got.rows[i].data(), ref.rows[i].data(), m.vocab_size()), 1e-4)
        << "row " << i;
  }
  pc.Release(&warm);

  // Exact hit: the whole 48-token run of `warm` (3 full blocks) again.
  CachedSequence again;
  again.tokens.assign(prompt.begin(), prompt.begin() + 48);
  EXPECT_EQ(pc.Acquire(&again), 47);
  ASSERT_EQ(again.kv.block_table.size(), 3u);
  const GreedyRun exact = Continue(m, **kv, &pc, &again, 4);
  CachedSequence cold2;
  cold2.tokens.assign(prompt.begin(), prompt.begin() + 48);
  auto kv3 = m.CreateKvCache(8, bs);
  const GreedyRun ref2 = Continue(m, **kv3, nullptr, &cold2, 4);
  EXPECT_EQ(exact.ids, ref2.ids);
  for (size_t i = 0; i < ref2.rows.size(); ++i) {
    EXPECT_LE(testing::RowRelError(exact.rows[i].data(), ref2.rows[i].data(), m.vocab_size()), 1e-4);
  }
  pc.Release(&again);
  (*kv3)->Release(&cold2.kv);
  (*cold_kv)->Release(&cold.kv);
  EXPECT_EQ((*kv)->allocator().free_blocks(), 16);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PrefixReuseTest,
                         ::testing::Values("llama3-tiny", "qwen3-tiny", "mistral-tiny-swa", "gemma3-tiny"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace llmhost::prefix_cache_test
