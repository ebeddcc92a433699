// The engine with real fixture models: greedy ids equal the plain generation
// loop (model/generate.h) alone, beside 7 others and with 16 at once; prefix
// reuse (partial and exact) reports cached tokens and changes nothing;
// cancel mid-stream and shutdown release every block; context limits.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <thread>

#include "engine/engine_test_util.h"

namespace llmhost::engine_test {
namespace {

using testing::Collect;
using testing::Greedy;
using testing::Outcome;
using testing::PromptIds;
using testing::ReferenceGreedy;

// ReferenceGreedy runs the same Model as the engine: it is called only
// while the engine is idle (Model::Forward calls must not overlap).

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::LoadFixture("llama3-tiny", &f_)) GTEST_SKIP() << "llama3-tiny not available";
  }
  std::unique_ptr<Engine> MakeEngine(EngineOptions opt) {
    auto e = Engine::Create(f_.model.get(), f_.tokenizer.get(), opt);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }
  static EngineOptions Small() {
    EngineOptions opt;
    opt.block_size = 16;
    opt.kv_blocks = 64;
    opt.prefill_chunk_tokens = 32;
    return opt;
  }
  int64_t vocab() const { return f_.model->vocab_size(); }
  testing::Fixture f_;
};

TEST_F(EngineTest, BatchInvariantGreedyIds) {
  // Prompts of 5..75 tokens; chunks of 32 interleave with decodes.
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) prompts.push_back(PromptIds(vocab(), 5 + 10 * i, 100 + i));
  const int kTokens = 24;
  std::vector<std::vector<int32_t>> alone;
  {
    EngineOptions opt = Small();
    opt.prefix_caching = false;
    auto engine = MakeEngine(opt);
    ASSERT_TRUE(engine);
    for (const auto& p : prompts) {
      std::shared_ptr<EventStream> s;
      ASSERT_TRUE(engine->Submit(Greedy(p, kTokens, &s)).ok());
      alone.push_back(Collect(s).ids);
    }
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(alone[i], ReferenceGreedy(*f_.model, prompts[i], kTokens)) << "prompt " << i;
  }
  auto engine = MakeEngine(Small());
  ASSERT_TRUE(engine);
  std::vector<std::shared_ptr<EventStream>> streams(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(engine->Submit(Greedy(prompts[i], kTokens, &streams[i])).ok());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    Outcome o = Collect(streams[i]);
    EXPECT_EQ(o.ids, alone[i]) << "prompt " << i << " beside 7 others";
    EXPECT_EQ(o.final_event.finish, FinishReason::kLength);
    EXPECT_EQ(o.final_event.usage.completion_tokens, kTokens);
    EXPECT_EQ(o.final_event.usage.prompt_tokens, static_cast<int64_t>(prompts[i].size()));
  }
  const EngineStats st = engine->WaitIdle();
  EXPECT_EQ(st.kv.blocks_used, 0);
  EXPECT_EQ(st.counters.generated_tokens, 8u * kTokens);
  EXPECT_EQ(st.counters.picked_rows, 8u * kTokens);  // every plain greedy row came back as its token
}

// A plain greedy row comes back from its step as its token (picked where the
// logits are), a row that needs its logits (logprobs here) as its logits,
// also in the same step. Either way the ids are the reference's, and the
// logprobs row gets its logprobs.
TEST_F(EngineTest, PlainRowsComeBackAsTokensAndOthersAsLogits) {
  const std::vector<int32_t> a = PromptIds(vocab(), 9, 300), b = PromptIds(vocab(), 14, 301);
  auto engine = MakeEngine(Small());
  ASSERT_TRUE(engine);
  std::shared_ptr<EventStream> sa, sb;
  ASSERT_TRUE(engine->Submit(Greedy(a, 16, &sa)).ok());
  GenerationRequest rb = Greedy(b, 4, &sb);
  rb.sampling.logprobs = true;
  ASSERT_TRUE(engine->Submit(std::move(rb)).ok());
  const Outcome oa = Collect(sa), ob = Collect(sb);
  EXPECT_EQ(oa.ids, ReferenceGreedy(*f_.model, a, 16));
  EXPECT_EQ(ob.ids, ReferenceGreedy(*f_.model, b, 4));
  int64_t logprobs = 0;
  for (const RequestEvent& ev : ob.events) {
    for (const SampledToken& t : ev.logprobs) {
      EXPECT_LT(t.logprob, 0.0f);  // a random model's greedy pick is not certain
      ++logprobs;
    }
  }
  EXPECT_EQ(logprobs, 4);
  const EngineStats st = engine->WaitIdle();
  EXPECT_EQ(st.counters.generated_tokens, 20u);
  EXPECT_EQ(st.counters.picked_rows, 16u);  // a's rows, never b's
}

// With a sample pool the rows of a step are drawn on its threads: seeded
// T=1 top_p draws (some with logprobs) give each request the tokens it gets
// alone on the executor thread.
TEST_F(EngineTest, RowsDrawnOnASamplePoolMatchTheirDrawsAlone) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 8; ++i) {
    GenerationRequest r;
    r.prompt = PromptIds(vocab(), 4 + 9 * i, 500 + i);
    r.sampling.temperature = 1.0;
    r.sampling.top_p = i % 2 == 0 ? 0.9 : 1.0;
    r.sampling.seed = 77 + i;
    r.sampling.logprobs = i % 3 == 0;
    r.max_tokens = 20;
    r.ignore_eos = true;
    reqs.push_back(std::move(r));
  }
  auto run = [&](ThreadPool* pool, bool together, uint64_t* pooled) {
    EngineOptions opt = Small();
    opt.kv_blocks = 128;
    opt.sample_pool = pool;
    auto engine = MakeEngine(opt);
    std::vector<std::vector<int32_t>> ids(reqs.size());
    if (!engine) return ids;
    std::vector<std::shared_ptr<EventStream>> streams(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      GenerationRequest r = reqs[i];
      streams[i] = std::make_shared<EventStream>();
      r.on_event = streams[i]->Callback();
      EXPECT_TRUE(engine->Submit(std::move(r)).ok());
      if (!together) ids[i] = Collect(streams[i]).ids;
    }
    if (together) {
      for (size_t i = 0; i < reqs.size(); ++i) ids[i] = Collect(streams[i]).ids;
    }
    *pooled = engine->WaitIdle().counters.pooled_draws;
    return ids;
  };
  uint64_t pooled_alone = 0, pooled = 0;
  const std::vector<std::vector<int32_t>> alone = run(nullptr, false, &pooled_alone);
  ThreadPool pool(4);
  const std::vector<std::vector<int32_t>> together = run(&pool, true, &pooled);
  EXPECT_EQ(pooled_alone, 0u);
  EXPECT_GT(pooled, 0u);  // rows did go to the pool
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(alone[i].size(), 20u) << i;
    EXPECT_EQ(together[i], alone[i]) << "request " << i;
  }
}

// Seeded sampled requests (temperature, top_k, top_p, min_p) submitted
// twice, side by side: as they are, their rows come back picked where the
// logits are (Backend::PickRows); with logprobs, as logits drawn by the
// host's sampler. Both draw each token at the same u of the request's
// generator through the same filters, so each pair gets the same tokens.
// Returns the engine's picked rows.
uint64_t ExpectPickedDrawsMatchHostDraws(Model& model, const Tokenizer* tokenizer, int max_tokens) {
  EngineOptions opt;
  opt.block_size = 16;
  opt.kv_blocks = 256;
  opt.prefill_chunk_tokens = 32;
  opt.max_concurrent_requests = 16;
  auto engine = Engine::Create(&model, tokenizer, opt);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  if (!engine.ok()) return 0;
  std::vector<std::shared_ptr<EventStream>> streams;
  for (int i = 0; i < 8; ++i) {
    GenerationRequest r;
    r.prompt = PromptIds(model.vocab_size(), 3 + 7 * i, 700 + i);
    r.sampling.temperature = 0.6 + 0.2 * i;
    r.sampling.top_k = i % 4 == 1 ? 20 : i % 4 == 3 ? 1000 : 0;
    r.sampling.top_p = i % 2 == 0 ? 0.9 : 1.0;
    r.sampling.min_p = i % 3 == 2 ? 0.05 : 0.0;
    r.sampling.seed = 1000 + i;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    for (bool logprobs : {false, true}) {
      GenerationRequest twin = r;
      twin.sampling.logprobs = logprobs;
      streams.push_back(std::make_shared<EventStream>());
      twin.on_event = streams.back()->Callback();
      EXPECT_TRUE((*engine)->Submit(std::move(twin)).ok());
    }
  }
  for (size_t i = 0; i < streams.size(); i += 2) {
    const Outcome picked = Collect(streams[i]), drawn = Collect(streams[i + 1]);
    EXPECT_EQ(picked.ids.size(), static_cast<size_t>(max_tokens)) << "request " << i / 2;
    EXPECT_EQ(picked.ids, drawn.ids) << "request " << i / 2 << ": picked by the backend, drawn on the host";
  }
  const EngineStats st = (*engine)->WaitIdle();
  EXPECT_EQ(st.kv.blocks_used, 0);
  return st.counters.picked_rows;
}

TEST_F(EngineTest, PickedDrawsAreTheHostSamplersDraws) {
  EXPECT_EQ(ExpectPickedDrawsMatchHostDraws(*f_.model, f_.tokenizer.get(), 24), 8u * 24);
}

// On the GPU: each of 32 requests of different lengths (prefill chunks and
// decodes in the same steps) gets the greedy ids it gets alone.
TEST(CudaEngineTest, BatchInvariantGreedyIdsAmong32) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
  testing::Fixture f;
  // serve's precision: prompt rows on the tensor cores, generated rows in f32.
  if (!testing::LoadFixture("llama3-tiny", &f, DeviceKind::kCuda, Precision::kAuto)) {
    GTEST_SKIP() << "llama3-tiny not available";
  }
  EngineOptions opt;
  opt.block_size = 16;
  opt.kv_blocks = 512;
  opt.prefill_chunk_tokens = 32;
  opt.max_concurrent_requests = 32;
  const int kTokens = 20;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 32; ++i) prompts.push_back(PromptIds(f.model->vocab_size(), 3 + 9 * i, 500 + i));
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) alone.push_back(ReferenceGreedy(*f.model, p, kTokens));
  auto engine = Engine::Create(f.model.get(), f.tokenizer.get(), opt);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<std::shared_ptr<EventStream>> streams(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE((*engine)->Submit(Greedy(prompts[i], kTokens, &streams[i])).ok());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    Outcome o = Collect(streams[i]);
    EXPECT_EQ(o.final_event.finish, FinishReason::kLength) << i;
    EXPECT_EQ(o.ids, alone[i]) << "prompt " << i << " among 32";
  }
  EXPECT_EQ((*engine)->WaitIdle().kv.blocks_used, 0);
}

// On the GPU: the rows picked on the device draw what the host's sampler
// draws from the same logits (a draw within ~1e-6 of a boundary between two
// tokens could differ; none is expected in 8 x 32 tokens).
TEST(CudaEngineTest, PickedDrawsAreTheHostSamplersDraws) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
  testing::Fixture f;
  if (!testing::LoadFixture("llama3-tiny", &f, DeviceKind::kCuda, Precision::kAuto)) {
    GTEST_SKIP() << "llama3-tiny not available";
  }
  EXPECT_EQ(ExpectPickedDrawsMatchHostDraws(*f.model, f.tokenizer.get(), 32), 8u * 32);
}

// On the GPU, decode steps replay recorded device graphs: the same greedy ids
// as plain launches (LLMHOST_CUDA_GRAPHS=off), at batch 1 and among 8.
TEST(CudaEngineTest, DecodeStepsReplayDeviceGraphsWithTheSameIds) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
  std::vector<std::vector<int32_t>> prompts;
  const int kTokens = 40;
  std::vector<std::vector<int32_t>> ids[2];
  uint64_t replays[2] = {0, 0};
  for (int graphs = 1; graphs >= 0; --graphs) {
    if (graphs == 0) setenv("LLMHOST_CUDA_GRAPHS", "off", 1);
    testing::Fixture f;
    const bool loaded = testing::LoadFixture("llama3-tiny", &f, DeviceKind::kCuda, Precision::kAuto);
    unsetenv("LLMHOST_CUDA_GRAPHS");
    if (!loaded) GTEST_SKIP() << "llama3-tiny not available";
    if (prompts.empty()) {
      for (int i = 0; i < 8; ++i) prompts.push_back(PromptIds(f.model->vocab_size(), 4 + 11 * i, 900 + i));
    }
    for (const auto& p : prompts) ids[graphs].push_back(ReferenceGreedy(*f.model, p, kTokens));
    EngineOptions opt;
    opt.block_size = 16;
    opt.kv_blocks = 256;
    opt.max_concurrent_requests = 8;
    auto engine = Engine::Create(f.model.get(), f.tokenizer.get(), opt);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    std::vector<std::shared_ptr<EventStream>> streams(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_TRUE((*engine)->Submit(Greedy(prompts[i], kTokens, &streams[i])).ok());
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(Collect(streams[i]).ids, ids[graphs][i]) << "prompt " << i << " among 8, graphs " << graphs;
    }
    (*engine)->WaitIdle();
    replays[graphs] = f.model->backend()->graph_replays();
  }
  EXPECT_GT(replays[1], static_cast<uint64_t>(kTokens)) << "decode steps were not replayed";
  EXPECT_EQ(replays[0], 0u);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(ids[1][i], ids[0][i]) << "prompt " << i;
}

TEST_F(EngineTest, SixteenConcurrentRequestsComplete) {
  EngineOptions opt = Small();
  opt.kv_blocks = 128;
  auto engine = MakeEngine(opt);
  ASSERT_TRUE(engine);
  const int kTokens = 16;
  std::vector<std::vector<int32_t>> prompts, refs;
  // References first: Model::Forward calls must not overlap the engine's.
  for (int i = 0; i < 16; ++i) {
    prompts.push_back(PromptIds(vocab(), 3 + 7 * i, 300 + i));
    refs.push_back(ReferenceGreedy(*f_.model, prompts.back(), kTokens));
  }
  std::vector<std::shared_ptr<EventStream>> streams(16);
  for (int i = 0; i < 16; ++i) {
    auto id = engine->Submit(Greedy(prompts[static_cast<size_t>(i)], kTokens, &streams[static_cast<size_t>(i)]));
    ASSERT_TRUE(id.ok()) << id.status().ToString();
  }
  for (int i = 0; i < 16; ++i) {
    Outcome o = Collect(streams[static_cast<size_t>(i)]);
    EXPECT_EQ(o.final_event.finish, FinishReason::kLength) << i;
    EXPECT_EQ(o.ids, refs[static_cast<size_t>(i)]) << i;
    // Every token came with its text decoded in order.
    EXPECT_EQ(o.text, f_.tokenizer->Decode(o.ids, true)) << i;
  }
  const EngineStats st = engine->WaitIdle();
  EXPECT_EQ(st.counters.finished, 16u);
  EXPECT_EQ(st.kv.blocks_used, 0);
  EXPECT_EQ(st.kv.blocks_free, 128);
}

TEST_F(EngineTest, PrefixReuseReportsCachedTokensAndChangesNothing) {
  auto engine = MakeEngine(Small());
  ASSERT_TRUE(engine);
  const std::vector<int32_t> first = PromptIds(vocab(), 70, 7);
  std::vector<int32_t> second(first.begin(), first.begin() + 50);
  for (int32_t t : PromptIds(vocab(), 9, 8)) second.push_back(t);
  const std::vector<int32_t> exact(first.begin(), first.begin() + 64);

  std::shared_ptr<EventStream> s1, s2, s3, s4;
  ASSERT_TRUE(engine->Submit(Greedy(first, 12, &s1)).ok());
  Outcome o1 = Collect(s1);
  EXPECT_EQ(o1.final_event.usage.cached_tokens, 0);
  engine->WaitIdle();
  EXPECT_EQ(o1.ids, ReferenceGreedy(*f_.model, first, 12));

  ASSERT_TRUE(engine->Submit(Greedy(second, 12, &s2)).ok());
  Outcome o2 = Collect(s2);
  EXPECT_EQ(o2.final_event.usage.cached_tokens, 48);  // 3 full blocks of the shared 50
  engine->WaitIdle();
  EXPECT_EQ(o2.ids, ReferenceGreedy(*f_.model, second, 12));

  // Exact hit: 4 full blocks cached; the last token is run again.
  ASSERT_TRUE(engine->Submit(Greedy(exact, 12, &s3)).ok());
  Outcome o3 = Collect(s3);
  EXPECT_EQ(o3.final_event.usage.cached_tokens, 63);
  engine->WaitIdle();
  EXPECT_EQ(o3.ids, ReferenceGreedy(*f_.model, exact, 12));

  // Multi-turn: the first conversation plus its answer hits its generated blocks too.
  std::vector<int32_t> turn2 = first;
  turn2.insert(turn2.end(), o1.ids.begin(), o1.ids.end());  // 82 tokens: 5 blocks
  turn2.push_back(5);
  ASSERT_TRUE(engine->Submit(Greedy(turn2, 6, &s4)).ok());
  Outcome o4 = Collect(s4);
  EXPECT_EQ(o4.final_event.usage.cached_tokens, 80);
  engine->WaitIdle();
  EXPECT_EQ(o4.ids, ReferenceGreedy(*f_.model, turn2, 6));

  const EngineStats st = engine->WaitIdle();
  EXPECT_EQ(st.kv.lookups, 4u);
  EXPECT_EQ(st.kv.hits, 3u);
  EXPECT_EQ(st.counters.cached_tokens, 48u + 63u + 80u);
  EXPECT_GT(st.kv.blocks_cached, 0);
  EXPECT_EQ(st.kv.blocks_used, 0);
}

TEST_F(EngineTest, CancelMidStreamReleasesEveryBlock) {
  EngineOptions opt = Small();
  opt.max_concurrent_requests = 1;
  auto engine = MakeEngine(opt);
  ASSERT_TRUE(engine);
  // A long request, cancelled from its own callback after 3 tokens, and a
  // queued one cancelled from this thread before it ever runs.
  Engine* e = engine.get();
  auto s1 = std::make_shared<EventStream>();
  auto seen = std::make_shared<std::atomic<int>>(0);
  GenerationRequest r1;
  r1.prompt = PromptIds(vocab(), 40, 1);
  r1.sampling.temperature = 0;
  r1.ignore_eos = true;
  r1.on_event = [s1, e, seen](RequestEvent ev) {
    if (++*seen == 3) e->Cancel(ev.request_id);
    s1->Push(std::move(ev));
  };
  std::shared_ptr<EventStream> s2;
  ASSERT_TRUE(engine->Submit(std::move(r1)).ok());
  auto i2 = engine->Submit(Greedy(PromptIds(vocab(), 20, 2), 50, &s2));
  ASSERT_TRUE(i2.ok());
  engine->Cancel(*i2);

  Outcome o1 = Collect(s1);
  Outcome o2 = Collect(s2);
  EXPECT_EQ(o1.final_event.finish, FinishReason::kAbort);
  EXPECT_GE(o1.ids.size(), 3u);
  EXPECT_LT(o1.ids.size(), 10u);  // stopped within a step of the cancel
  EXPECT_EQ(o2.final_event.finish, FinishReason::kAbort);
  const EngineStats st = engine->WaitIdle();
  EXPECT_EQ(st.kv.blocks_used, 0);
  EXPECT_EQ(st.kv.blocks_free, st.kv.blocks_total);
  EXPECT_EQ(st.counters.aborted, 2u);
  // The engine still serves afterwards.
  std::shared_ptr<EventStream> s3;
  ASSERT_TRUE(engine->Submit(Greedy(PromptIds(vocab(), 9, 3), 4, &s3)).ok());
  EXPECT_EQ(Collect(s3).ids.size(), 4u);
}

TEST_F(EngineTest, DefaultOptionsReserveEightFullContextsAndHoldAFloor) {
  auto engine = MakeEngine(EngineOptions{});
  ASSERT_TRUE(engine);
  // llama3-tiny: 4096 positions, 2 layers, 2 KV heads of 16; f32 blocks of 256: 128 KiB.
  const uint64_t block = uint64_t{2} * 2 * 256 * 32 * sizeof(float);
  EXPECT_EQ(engine->context_length(), 4096) << "the model's whole context, never cut to fit a reservation";
  EXPECT_EQ(engine->max_queue(), 32);
  const EngineStats st = engine->Stats();
  EXPECT_EQ(st.kv_max_bytes, 8 * 4096 / 256 * block);
  EXPECT_EQ(st.kv.blocks_total, 1024 / 256) << "1K tokens of memory at first";
  EXPECT_EQ(st.kv_cache_bytes, 4 * block);
  EngineOptions bad;
  bad.block_size = 0;
  EXPECT_EQ(Engine::Create(f_.model.get(), f_.tokenizer.get(), bad).status().code(),
            StatusCode::kInvalidArgument);
  bad = EngineOptions{};
  bad.max_concurrent_requests = 0;
  EXPECT_EQ(Engine::Create(f_.model.get(), f_.tokenizer.get(), bad).status().code(),
            StatusCode::kInvalidArgument);
  bad = EngineOptions{};
  bad.max_concurrent_requests = 20;
  auto e20 = Engine::Create(f_.model.get(), f_.tokenizer.get(), bad);
  ASSERT_TRUE(e20.ok());
  EXPECT_EQ((*e20)->max_queue(), 80);
}

// A budget a test opens and closes; it counts what is claimed and returned.
class TestBudget : public KvBudget {
 public:
  bool Claim(uint64_t bytes) override {
    if (!open.load()) {
      ++denied;
      return false;
    }
    held += bytes;
    return true;
  }
  void Return(uint64_t bytes) override { held -= bytes; }
  std::atomic<bool> open{true};
  std::atomic<uint64_t> held{0};
  std::atomic<int> denied{0};
};

// The cache grows as a prompt needs it, every growth claimed from the
// budget; while the budget refuses, the request waits (the rest of the
// engine is not stuck) and goes on once it opens; the memory above the
// floor goes back when asked (memory pressure) and after idle time.
TEST_F(EngineTest, TheCacheGrowsOnClaimsAndGivesTheMemoryBack) {
  auto budget = std::make_shared<TestBudget>();
  EngineOptions opt;
  opt.block_size = 16;
  opt.kv_floor_tokens = 64;
  opt.kv_budget = budget;
  opt.kv_idle_release_s = 0.2;
  auto engine = MakeEngine(opt);
  ASSERT_TRUE(engine);
  const uint64_t floor = engine->Stats().kv_cache_bytes;
  EXPECT_EQ(engine->Stats().kv.blocks_total, 4);
  const std::vector<int32_t> prompt = PromptIds(vocab(), 600, 31);  // 38 blocks
  const std::vector<int32_t> want = ReferenceGreedy(*f_.model, prompt, 6);
  budget->open = false;
  std::shared_ptr<EventStream> s;
  ASSERT_TRUE(engine->Submit(Greedy(prompt, 6, &s)).ok());
  for (int i = 0; i < 200 && budget->denied.load() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(budget->denied.load(), 3) << "the claim is tried again while the request waits";
  EXPECT_EQ(engine->Stats().waiting, 1);
  budget->open = true;
  Outcome o = Collect(s);
  EXPECT_EQ(o.ids, want);
  const EngineStats grown = engine->WaitIdle();
  EXPECT_GE(grown.kv.blocks_total, 38);
  EXPECT_EQ(budget->held.load() + floor, grown.kv_cache_bytes) << "every block above the floor was claimed";
  // Idle: the memory above the floor goes back by itself.
  for (int i = 0; i < 200 && engine->Stats().kv_cache_bytes > floor; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(engine->Stats().kv_cache_bytes, floor);
  EXPECT_EQ(budget->held.load(), 0u);
  // And at once when asked.
  ASSERT_TRUE(engine->Submit(Greedy(prompt, 2, &s)).ok());
  Collect(s);
  engine->WaitIdle();
  EXPECT_GT(budget->held.load(), 0u);
  engine->ReleaseKvMemory();
  for (int i = 0; i < 100 && budget->held.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(budget->held.load(), 0u);
}

// A request that could never get its memory ends with an error after the
// wait, instead of waiting forever.
TEST_F(EngineTest, ARequestWaitsBoundedForItsMemory) {
  auto budget = std::make_shared<TestBudget>();
  budget->open = false;
  EngineOptions opt;
  opt.block_size = 16;
  opt.kv_floor_tokens = 32;
  opt.kv_budget = budget;
  opt.kv_wait_seconds = 0.3;
  auto engine = MakeEngine(opt);
  ASSERT_TRUE(engine);
  std::shared_ptr<EventStream> s;
  ASSERT_TRUE(engine->Submit(Greedy(PromptIds(vocab(), 300, 32), 4, &s)).ok());
  Outcome o = Collect(s);
  EXPECT_EQ(o.final_event.finish, FinishReason::kError);
  EXPECT_NE(o.final_event.error.message().find("memory"), std::string::npos) << o.final_event.error.message();
  // A short one fits in the floor and is served.
  ASSERT_TRUE(engine->Submit(Greedy(PromptIds(vocab(), 10, 33), 4, &s)).ok());
  EXPECT_EQ(Collect(s).ids.size(), 4u);
}

TEST_F(EngineTest, ContextLimits) {
  EngineOptions opt = Small();
  opt.max_context = 64;
  auto engine = MakeEngine(opt);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->context_length(), 64);
  std::shared_ptr<EventStream> s;
  auto too_long = engine->Submit(Greedy(PromptIds(vocab(), 65, 1), 4, &s));
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.status().message().find("Prompt too long: 65 tokens exceeds max context window of 64"),
            std::string::npos)
      << too_long.status().message();
  EXPECT_EQ(engine->Submit(Greedy(PromptIds(vocab(), 64, 1), 4, &s)).status().code(),
            StatusCode::kInvalidArgument);
  // max_tokens beyond the rest of the context: clamped, finish "length".
  const std::vector<int32_t> p = PromptIds(vocab(), 60, 2);
  ASSERT_TRUE(engine->Submit(Greedy(p, 100, &s)).ok());
  Outcome o = Collect(s);
  EXPECT_EQ(o.ids.size(), 4u);
  EXPECT_EQ(o.final_event.finish, FinishReason::kLength);
  engine->WaitIdle();
  EXPECT_EQ(o.ids, ReferenceGreedy(*f_.model, p, 4));
  // Unset max_tokens: up to the context too.
  GenerationRequest r = Greedy(PromptIds(vocab(), 61, 3), 0, &s);
  r.max_tokens.reset();
  ASSERT_TRUE(engine->Submit(std::move(r)).ok());
  EXPECT_EQ(Collect(s).ids.size(), 3u);
  // max_tokens 0: no token, finish "length".
  ASSERT_TRUE(engine->Submit(Greedy(PromptIds(vocab(), 10, 4), 0, &s)).ok());
  o = Collect(s);
  EXPECT_TRUE(o.ids.empty());
  EXPECT_EQ(o.final_event.finish, FinishReason::kLength);
  // Other invalid requests.
  GenerationRequest bad = Greedy({}, 4, &s);
  EXPECT_EQ(engine->Submit(std::move(bad)).status().code(), StatusCode::kInvalidArgument);
  bad = Greedy({1, static_cast<int32_t>(vocab())}, 4, &s);
  EXPECT_NE(engine->Submit(std::move(bad)).status().message().find("vocabulary"), std::string::npos);
  bad = Greedy({1, 2}, -1, &s);
  EXPECT_NE(engine->Submit(std::move(bad)).status().message().find("max_tokens"), std::string::npos);
  bad = Greedy({1, 2}, 4, &s);
  bad.sampling.top_p = 0;
  EXPECT_NE(engine->Submit(std::move(bad)).status().message().find("top_p"), std::string::npos);
  bad = Greedy({1, 2}, 4, &s);
  bad.stop = {""};
  EXPECT_EQ(engine->Submit(std::move(bad)).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineTest, SeededSamplingIsReproducibleBesideOtherRequests) {
  auto engine = MakeEngine(Small());
  ASSERT_TRUE(engine);
  auto sampled = [&](uint64_t seed, std::shared_ptr<EventStream>* s) {
    GenerationRequest r = Greedy(PromptIds(vocab(), 12, 9), 20, s);
    r.sampling.temperature = 1.0;
    r.sampling.top_p = 0.9;
    r.sampling.seed = seed;
    r.sampling.logprobs = true;
    r.sampling.top_logprobs = 3;
    return r;
  };
  std::shared_ptr<EventStream> a;
  ASSERT_TRUE(engine->Submit(sampled(42, &a)).ok());
  const Outcome alone = Collect(a);
  std::vector<std::shared_ptr<EventStream>> others(4);
  std::shared_ptr<EventStream> b;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(engine->Submit(sampled(7 + i, &others[static_cast<size_t>(i)])).ok());
  ASSERT_TRUE(engine->Submit(sampled(42, &b)).ok());
  for (int i = 2; i < 4; ++i) ASSERT_TRUE(engine->Submit(sampled(7 + i, &others[static_cast<size_t>(i)])).ok());
  const Outcome beside = Collect(b);
  EXPECT_EQ(beside.ids, alone.ids);
  ASSERT_EQ(alone.ids.size(), 20u);
  // Logprobs: one entry per token, the chosen id among them, 3 top entries.
  size_t n = 0;
  for (const RequestEvent& ev : alone.events) {
    ASSERT_EQ(ev.logprobs.size(), ev.token_ids.size());
    for (const SampledToken& t : ev.logprobs) {
      EXPECT_EQ(t.top.size(), 3u);
      EXPECT_LE(t.logprob, 0.0f);
      EXPECT_GE(t.top[0].logprob, t.top[1].logprob);
      ++n;
    }
  }
  EXPECT_EQ(n, 20u);
  for (auto& s : others) Collect(s);
}

// A pool too small for every request at once: the newest is preempted
// (and later resumed from the prefix cache); ids stay those of the
// reference; the pool is whole at the end. Driven step by step.
void CheckPreemptionResumes(testing::Fixture& f) {
  const int64_t bs = 16;
  const int64_t vocab = f.model->vocab_size();
  auto cache = f.model->CreateKvCache(10, bs);
  ASSERT_TRUE(cache.ok());
  SchedulerOptions so;
  so.max_running = 4;
  so.prefill_chunk_tokens = 64;
  Scheduler sched(std::make_unique<ModelStep>(f.model.get()), std::move(cache).value(), Sha256Digest{},
                  f.tokenizer.get(), so);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::shared_ptr<EventStream>> streams(4);
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(PromptIds(vocab, 20 + i, 900 + i));
    GenerationRequest r = Greedy(prompts.back(), 30, &streams[static_cast<size_t>(i)]);
    ASSERT_TRUE(sched.Validate(r).ok());
    sched.Enqueue(static_cast<uint64_t>(i + 1), std::move(r));
  }
  int steps = 0;
  while (sched.HasWork() && steps < 10000) {
    sched.Step();
    ++steps;
  }
  ASSERT_FALSE(sched.HasWork());
  EXPECT_GT(sched.counters().preemptions, 0u);
  for (int i = 0; i < 4; ++i) {
    Outcome o = Collect(streams[static_cast<size_t>(i)]);
    EXPECT_EQ(o.final_event.finish, FinishReason::kLength) << i;
    EXPECT_EQ(o.ids, ReferenceGreedy(*f.model, prompts[static_cast<size_t>(i)], 30)) << i;
    EXPECT_EQ(o.text, f.tokenizer->Decode(o.ids, true));
  }
  EXPECT_EQ(sched.cache().allocator().free_blocks(), 10);
}

TEST_F(EngineTest, KvExhaustionPreemptsTheNewestAndResumes) { CheckPreemptionResumes(f_); }

// The same on the GPU at serve's precision (KV blocks in device memory).
TEST(CudaEngineTest, KvExhaustionPreemptsTheNewestAndResumes) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << (CudaBuilt() ? "no GPU here" : "built without CUDA");
  testing::Fixture f;
  if (!testing::LoadFixture("llama3-tiny", &f, DeviceKind::kCuda, Precision::kAuto)) {
    GTEST_SKIP() << "llama3-tiny not available";
  }
  CheckPreemptionResumes(f);
}

TEST_F(EngineTest, SlidingWindowModelMatchesReference) {
  testing::Fixture swa;
  if (!testing::LoadFixture("mistral-tiny-swa", &swa)) GTEST_SKIP();
  auto e = Engine::Create(swa.model.get(), swa.tokenizer.get(), Small());
  ASSERT_TRUE(e.ok());
  const std::vector<int32_t> p = PromptIds(swa.model->vocab_size(), 50, 4);
  for (int round = 0; round < 2; ++round) {  // cold, then from the prefix cache
    std::shared_ptr<EventStream> s;
    ASSERT_TRUE((*e)->Submit(Greedy(p, 20, &s)).ok());
    Outcome o = Collect(s);
    EXPECT_EQ(o.final_event.usage.cached_tokens, round == 0 ? 0 : 48);
    (*e)->WaitIdle();
    EXPECT_EQ(o.ids, ReferenceGreedy(*swa.model, p, 20));
  }
}

}  // namespace
}  // namespace llmhost::engine_test
