// The engine over a KV block store (the hot/SSD tiers' interface): blocks
// published by one engine are restored by a later one (a model reloaded, a
// server restarted), reported as cached tokens, and give the same greedy ids
// as a cold run; a store that loses or refuses blocks only costs a prefill.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "engine/engine_test_util.h"
#include "kv/block_store.h"

namespace llmhost::block_store_engine_test {
namespace {

using testing::Collect;
using testing::Greedy;
using testing::Outcome;
using testing::PromptIds;
using testing::ReferenceGreedy;

// An in-memory BlockStore that checks what it is given.
class MapStore : public BlockStore {
 public:
  void Save(const BlockMeta& meta, std::vector<uint8_t> data) override {
    std::lock_guard<std::mutex> lk(mu_);
    EXPECT_EQ(data.size(), 2u * static_cast<uint64_t>(meta.n_layers * meta.block_size * meta.kv_dim) * 4u);
    EXPECT_EQ(meta.token_count, meta.block_size);
    EXPECT_EQ(meta.dtype, "F32");
    EXPECT_EQ(meta.model, "tiny");
    ++saves_;
    blocks_[meta.key] = {meta, std::make_shared<const std::vector<uint8_t>>(std::move(data))};
  }
  std::vector<BlockBytes> LoadPrefix(std::span<const BlockMeta> want) override {
    {
      std::unique_lock<std::mutex> gate(gate_mu_);
      ++entered_;
      gate_cv_.notify_all();
      gate_cv_.wait(gate, [this] { return !held_; });
    }
    std::lock_guard<std::mutex> lk(mu_);
    ++load_calls_;
    std::vector<BlockBytes> out;
    for (const BlockMeta& m : want) {
      auto it = blocks_.find(m.key);
      if (it == blocks_.end() || it->second.first.fingerprint != m.fingerprint ||
          it->second.first.n_layers != m.n_layers || it->second.first.kv_dim != m.kv_dim) {
        break;
      }
      out.push_back(it->second.second);
    }
    return out;
  }
  bool Contains(const BlockKey& key) const override {
    std::lock_guard<std::mutex> lk(mu_);
    return blocks_.count(key) > 0;
  }
  // Loads wait (a slow disk) until ReleaseLoads.
  void HoldLoads() {
    std::lock_guard<std::mutex> gate(gate_mu_);
    held_ = true;
  }
  void ReleaseLoads() {
    {
      std::lock_guard<std::mutex> gate(gate_mu_);
      held_ = false;
    }
    gate_cv_.notify_all();
  }
  // Waits (at most 10 s) until `n` loads have started; true when they have.
  bool WaitForLoads(int n) {
    std::unique_lock<std::mutex> gate(gate_mu_);
    return gate_cv_.wait_for(gate, std::chrono::seconds(10), [&] { return entered_ >= n; });
  }
  // Forgets every block (a cleared or lost cache).
  void Drop() {
    std::lock_guard<std::mutex> lk(mu_);
    blocks_.clear();
  }
  size_t size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return blocks_.size();
  }
  int saves() const {
    std::lock_guard<std::mutex> lk(mu_);
    return saves_;
  }
  int load_calls() const {
    std::lock_guard<std::mutex> lk(mu_);
    return load_calls_;
  }

 private:
  mutable std::mutex mu_;
  std::map<BlockKey, std::pair<BlockMeta, BlockBytes>> blocks_;
  int saves_ = 0, load_calls_ = 0;
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool held_ = false;
  int entered_ = 0;
};

class BlockStoreEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::LoadFixture("llama3-tiny", &f_)) GTEST_SKIP() << "llama3-tiny not available";
  }
  std::unique_ptr<Engine> MakeEngine(std::shared_ptr<BlockStore> store, int64_t kv_blocks = 64,
                                     std::shared_ptr<WeightsIdentityHandle> identity = nullptr) {
    EngineOptions opt;
    opt.weights_identity = std::move(identity);
    opt.block_size = 16;
    opt.kv_blocks = kv_blocks;
    opt.prefill_chunk_tokens = 32;
    opt.block_store = std::move(store);
    opt.model_id = "tiny";
    auto e = Engine::Create(f_.model.get(), f_.tokenizer.get(), opt);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }
  Outcome Run(Engine& engine, const std::vector<int32_t>& prompt, int n) {
    std::shared_ptr<EventStream> s;
    EXPECT_TRUE(engine.Submit(Greedy(prompt, n, &s)).ok());
    Outcome o = Collect(s);
    engine.WaitIdle();
    return o;
  }
  int64_t vocab() const { return f_.model->vocab_size(); }
  testing::Fixture f_;
};

TEST_F(BlockStoreEngineTest, ANewEngineRestoresWhatAnEarlierOneSaved) {
  auto store = std::make_shared<MapStore>();
  const std::vector<int32_t> prompt = PromptIds(vocab(), 70, 11);  // 4 full blocks + 6
  const std::vector<int32_t> cold = ReferenceGreedy(*f_.model, prompt, 12);
  {
    auto first = MakeEngine(store);
    ASSERT_TRUE(first);
    Outcome o = Run(*first, prompt, 12);
    EXPECT_EQ(o.final_event.usage.cached_tokens, 0);
    EXPECT_EQ(o.ids, cold);
    // Prompt + answer = 82 tokens, 81 of them run: 5 full blocks, each saved once.
    EXPECT_EQ(store->size(), 5u);
    EXPECT_EQ(first->WaitIdle().kv.store_saves, 5u);
    EXPECT_EQ(first->CachedPrefixTokens(prompt), 64);  // what the prefill guard prices as free
  }  // "unloaded": its paged blocks are gone
  auto second = MakeEngine(store);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->CachedPrefixTokens(prompt), 64);  // found in the store
  auto no_store = MakeEngine(nullptr);
  EXPECT_EQ(no_store->CachedPrefixTokens(prompt), 0);
  no_store.reset();
  Outcome o = Run(*second, prompt, 12);
  EXPECT_EQ(o.final_event.usage.cached_tokens, 64);  // 4 full blocks of the prompt
  EXPECT_EQ(o.ids, cold);
  const EngineStats st = second->WaitIdle();
  EXPECT_EQ(st.kv.store_restored, 4u);
  EXPECT_EQ(st.kv.store_saves, 0u);  // restored blocks, and the 5th it holds already, are not saved again
  EXPECT_EQ(st.kv.blocks_used, 0);

  // Exact hit from the store: every block restored, the last token run again.
  auto third = MakeEngine(store);
  const std::vector<int32_t> exact(prompt.begin(), prompt.begin() + 64);
  Outcome e = Run(*third, exact, 6);
  EXPECT_EQ(e.final_event.usage.cached_tokens, 63);
  EXPECT_EQ(e.ids, ReferenceGreedy(*f_.model, exact, 6));
}

TEST_F(BlockStoreEngineTest, PagedIndexFirstThenTheStore) {
  auto store = std::make_shared<MapStore>();
  const std::vector<int32_t> prompt = PromptIds(vocab(), 70, 12);
  {
    auto first = MakeEngine(store);
    Run(*first, prompt, 10);
  }
  auto engine = MakeEngine(store);
  // A 40-token prefix only (2 blocks) restores 2 blocks ...
  const std::vector<int32_t> part(prompt.begin(), prompt.begin() + 40);
  Outcome a = Run(*engine, part, 4);
  EXPECT_EQ(a.final_event.usage.cached_tokens, 32);
  // ... then the whole prompt takes those 2 from the paged index and 2 more from the store.
  Outcome b = Run(*engine, prompt, 10);
  EXPECT_EQ(b.final_event.usage.cached_tokens, 64);
  EXPECT_EQ(b.ids, ReferenceGreedy(*f_.model, prompt, 10));
  EXPECT_EQ(engine->WaitIdle().kv.store_restored, 4u);
}

TEST_F(BlockStoreEngineTest, ALostStoreCostsOnlyAPrefill) {
  auto store = std::make_shared<MapStore>();
  const std::vector<int32_t> prompt = PromptIds(vocab(), 50, 13);
  {
    auto first = MakeEngine(store);
    Run(*first, prompt, 4);
  }
  store->Drop();
  auto engine = MakeEngine(store);
  Outcome o = Run(*engine, prompt, 8);
  EXPECT_EQ(o.final_event.usage.cached_tokens, 0);
  EXPECT_EQ(o.ids, ReferenceGreedy(*f_.model, prompt, 8));
  EXPECT_EQ(store->load_calls(), 0);  // Contains() said no: no load attempted
}

TEST_F(BlockStoreEngineTest, RestoreIsBoundedByTheFreeBlocks) {
  auto store = std::make_shared<MapStore>();
  const std::vector<int32_t> prompt = PromptIds(vocab(), 100, 14);  // 6 full blocks + 4
  {
    auto first = MakeEngine(store);
    Run(*first, prompt, 4);
  }
  // A pool of 8 blocks: the prompt and its first output need 7; all 6
  // stored blocks fit and are restored, the rest is prefilled.
  auto engine = MakeEngine(store, 8);
  ASSERT_TRUE(engine);
  Outcome o = Run(*engine, prompt, 4);
  EXPECT_EQ(o.final_event.usage.cached_tokens, 96);
  EXPECT_EQ(o.ids, ReferenceGreedy(*f_.model, prompt, 4));
}

// A restore reads files: it runs beside the batch. A stream decodes to its
// end while another request's restore is held inside the store's load; the
// restored request then answers as a cold run would.
TEST_F(BlockStoreEngineTest, ARestoreRunsBesideTheRunningStreams) {
  auto store = std::make_shared<MapStore>();
  const std::vector<int32_t> prompt = PromptIds(vocab(), 70, 18);
  const std::vector<int32_t> other = PromptIds(vocab(), 20, 19);
  // The references first: the model must not run beside the engine.
  const std::vector<int32_t> cold = ReferenceGreedy(*f_.model, prompt, 6);
  const std::vector<int32_t> other_cold = ReferenceGreedy(*f_.model, other, 24);
  {
    auto first = MakeEngine(store);
    Run(*first, prompt, 4);
  }
  auto engine = MakeEngine(store);
  ASSERT_TRUE(engine);
  store->HoldLoads();
  std::shared_ptr<EventStream> restoring;
  ASSERT_TRUE(engine->Submit(Greedy(prompt, 6, &restoring)).ok());
  ASSERT_TRUE(store->WaitForLoads(1));  // its restore is inside the load
  std::shared_ptr<EventStream> stream;
  ASSERT_TRUE(engine->Submit(Greedy(other, 24, &stream)).ok());
  std::future<Outcome> streamed = std::async(std::launch::async, [&] { return Collect(stream); });
  const bool finished = streamed.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  store->ReleaseLoads();  // (a blocked executor would need this to go on)
  ASSERT_TRUE(finished) << "the stream waited for another request's restore";
  const Outcome s = streamed.get();
  EXPECT_EQ(s.ids, other_cold);
  const Outcome r = Collect(restoring);
  EXPECT_EQ(r.final_event.usage.cached_tokens, 64);
  EXPECT_EQ(r.ids, cold);
  const EngineStats st = engine->WaitIdle();
  EXPECT_EQ(st.kv.store_restored, 4u);
  EXPECT_EQ(st.kv.blocks_used, 0);
}

// A request cancelled while its restore runs: the blocks the restore took
// are written to the end, then freed, still findable: the same prompt later
// takes them from the paged index without loading again.
TEST_F(BlockStoreEngineTest, ACancelledRestoreFreesItsBlocksAndKeepsThemFindable) {
  auto store = std::make_shared<MapStore>();
  const std::vector<int32_t> prompt = PromptIds(vocab(), 70, 20);
  const std::vector<int32_t> cold = ReferenceGreedy(*f_.model, prompt, 6);
  {
    auto first = MakeEngine(store);
    Run(*first, prompt, 4);
  }
  auto engine = MakeEngine(store);
  ASSERT_TRUE(engine);
  store->HoldLoads();
  std::shared_ptr<EventStream> cancelled;
  Result<uint64_t> id = engine->Submit(Greedy(prompt, 6, &cancelled));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(store->WaitForLoads(1));
  engine->Cancel(*id);
  const Outcome c = Collect(cancelled);
  EXPECT_EQ(c.final_event.finish, FinishReason::kAbort);
  store->ReleaseLoads();
  // The cancel returned before the restore finished; the next step reaps it.
  Outcome o = Run(*engine, prompt, 6);
  EXPECT_EQ(o.final_event.usage.cached_tokens, 64);
  EXPECT_EQ(o.ids, cold);
  EXPECT_EQ(store->load_calls(), 1) << "the cancelled restore's blocks were used, not loaded again";
  const EngineStats st = engine->WaitIdle();
  EXPECT_EQ(st.kv.blocks_used, 0);
}

// Two requests for one stored prefix while it is read (parallel agents after
// a restart): the second waits for the first one's restore, one load in all.
TEST_F(BlockStoreEngineTest, OnePrefixAskedTwiceIsReadOnce) {
  auto store = std::make_shared<MapStore>();
  const std::vector<int32_t> prompt = PromptIds(vocab(), 70, 21);
  std::vector<int32_t> longer = prompt;
  longer.resize(90, 7);  // the same 4 stored blocks, then other tokens
  const std::vector<int32_t> cold = ReferenceGreedy(*f_.model, prompt, 5);
  const std::vector<int32_t> longer_cold = ReferenceGreedy(*f_.model, longer, 5);
  {
    auto first = MakeEngine(store);
    Run(*first, prompt, 4);
  }
  auto engine = MakeEngine(store);
  ASSERT_TRUE(engine);
  store->HoldLoads();
  std::shared_ptr<EventStream> a, b;
  ASSERT_TRUE(engine->Submit(Greedy(prompt, 5, &a)).ok());
  ASSERT_TRUE(store->WaitForLoads(1));
  ASSERT_TRUE(engine->Submit(Greedy(longer, 5, &b)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // b reaches the scheduler
  store->ReleaseLoads();
  const Outcome oa = Collect(a), ob = Collect(b);
  EXPECT_EQ(oa.final_event.usage.cached_tokens, 64);
  EXPECT_EQ(ob.final_event.usage.cached_tokens, 64);
  EXPECT_EQ(oa.ids, cold);
  EXPECT_EQ(ob.ids, longer_cold);
  EXPECT_EQ(store->load_calls(), 1);
  EXPECT_EQ(engine->WaitIdle().kv.store_restored, 4u);
}

// The store's keys start from the full weights identity, which the server
// computes in the background: until it is known the engine neither saves nor
// restores, and once it is known every block indexed meanwhile is saved,
// even if no request comes.
TEST_F(BlockStoreEngineTest, TheStoreWaitsForTheWeightsIdentityThenCatchesUp) {
  auto store = std::make_shared<MapStore>();
  const std::vector<int32_t> prompt = PromptIds(vocab(), 70, 15);
  auto pending = WeightsIdentityHandle::Pending();
  auto engine = MakeEngine(store, 64, pending);
  ASSERT_TRUE(engine);
  Outcome o = Run(*engine, prompt, 12);
  EXPECT_EQ(store->saves(), 0);
  EXPECT_FALSE(engine->WaitIdle().kv.store_ready);
  EXPECT_EQ(engine->CachedPrefixTokens(prompt), 64) << "the paged index works meanwhile";
  pending->Finish(Sha256Of("weights v1"), 0);
  for (int i = 0; i < 200 && store->size() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(store->size(), 5u) << "the blocks indexed before the identity was known are saved";
  EXPECT_TRUE(engine->WaitIdle().kv.store_ready);
  engine.reset();
  auto next = MakeEngine(store, 64, WeightsIdentityHandle::Ready(Sha256Of("weights v1")));
  Outcome again = Run(*next, prompt, 12);
  EXPECT_EQ(again.final_event.usage.cached_tokens, 64);
  EXPECT_EQ(again.ids, o.ids);
}

// Weights that changed where the sampled identity does not look (same size,
// same windows) have another full identity: nothing stored before matches.
TEST_F(BlockStoreEngineTest, AnotherWeightsIdentityMatchesNothingStored) {
  auto store = std::make_shared<MapStore>();
  const std::vector<int32_t> prompt = PromptIds(vocab(), 70, 16);
  {
    auto first = MakeEngine(store, 64, WeightsIdentityHandle::Ready(Sha256Of("weights v1")));
    Run(*first, prompt, 4);
  }
  ASSERT_GT(store->size(), 0u);
  auto other = MakeEngine(store, 64, WeightsIdentityHandle::Ready(Sha256Of("weights v2")));
  EXPECT_EQ(other->CachedPrefixTokens(prompt), 0);
  Outcome o = Run(*other, prompt, 4);
  EXPECT_EQ(o.final_event.usage.cached_tokens, 0);
  EXPECT_EQ(store->load_calls(), 0);
  // Weights that could not be hashed: the store is never used.
  auto failed = WeightsIdentityHandle::Pending();
  failed->Finish(Status::IOError("w.safetensors: the file changed while it was hashed"), 0);
  const size_t before = store->size();
  auto unhashed = MakeEngine(store, 64, failed);
  Outcome u = Run(*unhashed, PromptIds(vocab(), 70, 17), 4);
  EXPECT_EQ(u.final_event.usage.cached_tokens, 0);
  EXPECT_EQ(store->size(), before);
}

}  // namespace
}  // namespace llmhost::block_store_engine_test
