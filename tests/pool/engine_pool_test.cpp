// Engine pool admission (spec rule 11 with the accumulator fix, rule 13,
// section 4 "engine pool"): eviction when live memory undercounts, swaps,
// soft band, refusals that name the binding ceiling, guard off.
//
// Fakes: each model's admission size is chosen per test (FakeFactory);
// the probe's footprint and the engines' device-active bytes are set.
// Custom ceiling 10 GiB → soft target 8.5 GiB unless a test says otherwise.
#include "pool/engine_pool.h"

#include <gtest/gtest.h>

#include "fake_engine.h"

namespace llmhost::engine_pool_test {
namespace {

using testing::kGB;
using testing::PoolFixture;
using testing::FakeModelSpec;

FakeModelSpec Size(uint64_t resident, uint64_t device_active = 0) {
  FakeModelSpec s;
  s.resident = resident;
  s.device_active = device_active;
  return s;
}

TEST(EnginePoolAdmission, eviction_when_live_memory_undercounts) {
  PoolFixture f;
  f.factory->Set("a", Size(5 * kGB));
  f.factory->Set("b", Size(5 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  // Both live readings are 0 (allocators returned their pools, the weights
  // are page cache): the live-only check would admit b beside a (0 + 5 ≤ 8.5).
  f.probe->set_footprint(0);
  ASSERT_EQ(f.factory->Last("a")->device_active.load(), 0u);
  EXPECT_EQ(f.pool->Memory().committed[0], 5 * kGB);
  // The accumulator shows the pair over-commits (5 + 5 > 8.5): loading b evicts a.
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  EXPECT_TRUE(f.factory->Last("a")->stopped);
  EXPECT_EQ(f.pool->Memory().committed[0], 5 * kGB);
}

// The KV block store's RAM counts as committed memory, and gives way before
// any model: here 3 GiB of cache beside a (4) leaves no room for b (4) under
// the soft target (8.5); shrinking the cache to 0.5 GiB makes room, a stays.
TEST(EnginePoolAdmission, KvCacheRamCountsAndShrinksBeforeAModelIsEvicted) {
  PoolFixture f;
  auto cache = std::make_shared<std::atomic<uint64_t>>(0);
  std::vector<uint64_t> keeps;
  f.options.cache_ram_bytes = [cache] { return cache->load(); };
  f.options.shrink_cache = [cache, &keeps](uint64_t keep) {
    keeps.push_back(keep);
    const uint64_t before = cache->load();
    cache->store(std::min(before, keep));
    return before - cache->load();
  };
  f.factory->Set("a", Size(4 * kGB));
  f.factory->Set("b", Size(4 * kGB));
  f.Start({"a", "b"});
  f.probe->set_footprint(0);
  ASSERT_TRUE(f.Touch("a").ok());
  cache->store(3 * kGB);
  EXPECT_EQ(f.pool->Memory().cache_bytes, 3 * kGB);
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(keeps.size(), 1u);
  // 4 (a) + 3 (cache) + 4 (b) = 11 > 8.5: keep 3 − 2.5 = 0.5 GiB.
  EXPECT_EQ(keeps[0], kGB / 2);
  EXPECT_EQ(cache->load(), kGB / 2);
}

// A cache that cannot shrink (say, blocks still queued for the SSD) is
// counted all the same: the least recently used model is evicted instead.
TEST(EnginePoolAdmission, KvCacheThatCannotShrinkStillCounts) {
  PoolFixture f;
  f.options.cache_ram_bytes = [] { return 3 * kGB; };
  f.options.shrink_cache = [](uint64_t) { return uint64_t{0}; };
  f.factory->Set("a", Size(4 * kGB));
  f.factory->Set("b", Size(4 * kGB));
  f.Start({"a", "b"});
  f.probe->set_footprint(0);
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
}

TEST(EnginePoolAdmission, PairUnderTheSoftTargetStaysLoaded) {
  PoolFixture f;
  f.factory->Set("a", Size(4 * kGB));
  f.factory->Set("b", Size(4 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(f.pool->Memory().committed[0], 8 * kGB);
  EXPECT_EQ(f.StatusOf("a").memory_bytes, 4 * kGB);
}

TEST(EnginePoolAdmission, LiveReadingsAboveTheAccumulatorAlsoCount) {
  PoolFixture f;
  f.factory->Set("a", Size(2 * kGB, /*device_active=*/6 * kGB));  // grew past its estimate
  f.factory->Set("b", Size(3 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  EXPECT_EQ(f.StatusOf("a").memory_bytes, 6 * kGB);  // the measured growth
  ASSERT_TRUE(f.Touch("b").ok());  // max(6, 0, 2) + 3 > 8.5: a goes
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  // The footprint term: 7 GiB resident (say, a hot cache) + 2 > 8.5 evicts b.
  f.factory->Set("a", Size(2 * kGB));
  f.probe->set_footprint(7 * kGB);
  ASSERT_TRUE(f.Touch("a").ok());
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"a"});
}

TEST(EnginePoolAdmission, SwapAdmitsWhenTheFootprintLagsAfterEviction) {
  PoolFixture f;
  f.factory->Set("a", Size(6 * kGB));
  f.factory->Set("b", Size(6 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  f.probe->set_footprint(6 * kGB);  // stays: the evicted model's pages have not left yet
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
}

TEST(EnginePoolAdmission, HighFootprintWithoutEvictionStillBlocksTheFirstLoad) {
  PoolFixture f;
  f.factory->Set("a", Size(1 * kGB));
  f.Start({"a"});
  f.probe->set_footprint(9 * kGB + kGB / 2);
  PoolError e = f.Touch("a");
  EXPECT_EQ(e.code, PoolErrorCode::kInsufficientMemory);
  EXPECT_NE(e.message.find("footprint 9.50 GiB"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("custom ceiling"), std::string::npos) << e.message;
  EXPECT_TRUE(f.LoadedIds().empty());
}

TEST(EnginePoolAdmission, InsufficientMemoryWhenAllArePinned) {
  PoolFixture f;
  f.factory->Set("a", Size(5 * kGB));
  f.factory->Set("b", Size(6 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.pool->SetPinned("a", true).ok());
  ASSERT_TRUE(f.Touch("a").ok());
  PoolError e = f.Touch("b");
  EXPECT_EQ(e.code, PoolErrorCode::kInsufficientMemory);
  EXPECT_NE(e.message.find("pinned models hold 5.00 GiB"), std::string::npos) << e.message;
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"a"});
}

TEST(EnginePoolAdmission, SoftBandSwapEvictsAnIdleModelBeforeLoading) {
  PoolFixture f;
  f.factory->Set("a", Size(5 * kGB));
  f.factory->Set("b", Size(4 * kGB));  // 5 + 4 = 9: under the ceiling, above the soft target
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  // Evict before load: a stopped before b's load started.
  EXPECT_EQ(f.factory->Loads(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(f.factory->Last("a")->stopped);
}

TEST(EnginePoolAdmission, OverSoftWithNothingEvictableAdmitsUnderTheCeiling) {
  PoolFixture f;
  f.factory->Set("a", Size(5 * kGB));
  f.factory->Set("b", Size(4 * kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.pool->SetPinned("a", true).ok());
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"a", "b"}));
}

TEST(EnginePoolAdmission, TooLargeNamesTheBindingCeiling) {
  PoolFixture f;
  f.factory->Set("big", Size(11 * kGB));
  f.Start({"big"});
  PoolError e = f.Touch("big");
  EXPECT_EQ(e.code, PoolErrorCode::kTooLarge);
  EXPECT_NE(e.message.find("custom ceiling"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("--memory-guard-gb"), std::string::npos) << e.message;
}

TEST(EnginePoolAdmission, RefusalAdviceForTheDynamicAndStaticCeilings) {
  {
    PoolFixture f;
    f.options.guard.tier = GuardTier::kSafe;  // not custom
    f.factory->Set("big", Size(9 * kGB));
    f.Start({"big"}, /*custom_ceiling=*/0);
    f.SetMemory(64 * kGB, 8 * kGB);  // dynamic = 0 + 8 GiB binds
    PoolError e = f.Touch("big");
    EXPECT_EQ(e.code, PoolErrorCode::kTooLarge);
    EXPECT_NE(e.message.find("dynamic ceiling"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("close other programs"), std::string::npos) << e.message;
  }
  {
    PoolFixture f;
    f.options.guard.tier = GuardTier::kSafe;
    f.factory->Set("big", Size(13 * kGB));
    f.Start({"big"}, 0);
    f.SetMemory(16 * kGB, 16 * kGB);  // static = 12 GiB binds
    PoolError e = f.Touch("big");
    EXPECT_EQ(e.code, PoolErrorCode::kTooLarge);
    EXPECT_NE(e.message.find("static ceiling"), std::string::npos) << e.message;
  }
}

TEST(EnginePoolAdmission, GuardOffSwapStillEvictsAndNothingEvictableAdmitsOverTheCeiling) {
  PoolFixture f;
  f.options.guard.tier = GuardTier::kOff;
  f.factory->Set("a", Size(7 * kGB));
  f.factory->Set("b", Size(7 * kGB));
  f.factory->Set("c", Size(7 * kGB));
  f.Start({"a", "b", "c"}, 0);
  f.SetMemory(16 * kGB, 16 * kGB);  // static ceiling 12 GiB, soft 10.8 GiB
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());  // 14 > 10.8: the LRU goes, guard or not
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  ASSERT_TRUE(f.pool->SetPinned("b", true).ok());
  ASSERT_TRUE(f.Touch("c").ok());  // nothing evictable: best effort admits over the ceiling
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(f.pool->Memory().committed[0], 14 * kGB);
}

TEST(EnginePoolAdmission, SizeAwareVictimChoice) {
  PoolFixture f;
  f.factory->Set("small", Size(1 * kGB));
  f.factory->Set("large", Size(6 * kGB));
  f.factory->Set("new", Size(5 * kGB));
  f.Start({"large", "new", "small"});
  ASSERT_TRUE(f.Touch("small").ok());  // older
  f.Advance(1);
  ASSERT_TRUE(f.Touch("large").ok());
  f.Advance(1);
  // 7 + 5 = 12 > 8.5: 3.5 GiB needed; "small" (the LRU) frees only 1: "large" goes.
  ASSERT_TRUE(f.Touch("new").ok());
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"new", "small"}));
}

TEST(EnginePoolLoad, CachedLoadFailureUntilRediscovery) {
  PoolFixture f;
  FakeModelSpec bad = Size(kGB);
  bad.fail = true;
  f.factory->Set("a", bad);
  f.Start({"a"});
  PoolError e = f.Touch("a");
  EXPECT_EQ(e.code, PoolErrorCode::kUnavailable);
  EXPECT_NE(e.message.find("bad header"), std::string::npos);
  EXPECT_EQ(f.Touch("a").code, PoolErrorCode::kUnavailable);
  EXPECT_EQ(f.factory->Loads().size(), 1u);  // cached: not retried
  EXPECT_TRUE(f.StatusOf("a").load_error.has_value());
  EXPECT_EQ(f.pool->Memory().committed[0], 0u);
  f.factory->Set("a", Size(kGB));
  f.pool->Rediscover();
  EXPECT_TRUE(f.Touch("a").ok());
  EXPECT_EQ(f.factory->Loads().size(), 2u);
}

TEST(EnginePoolLoad, LoadSpeedIsTracked) {
  PoolFixture f;
  f.Start({"tiny"});
  ASSERT_TRUE(f.Touch("tiny").ok());
  EXPECT_EQ(f.pool->load_seconds_per_gb(), 0.0);  // 16 bytes of weights say nothing about speed
  std::filesystem::create_directories(f.root + "/big");
  ASSERT_TRUE(WriteFileAtomic(f.root + "/big/config.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomic(f.root + "/big/model.safetensors", std::string(4 << 20, 'w')).ok());
  f.pool->Rediscover();
  ASSERT_TRUE(f.Touch("big").ok());
  EXPECT_GT(f.pool->load_seconds_per_gb(), 0.0);
}

TEST(EnginePoolLoad, StatusReportsLoadingAndShape) {
  PoolFixture f;
  auto gate = std::make_shared<testing::Gate>();
  FakeModelSpec slow = Size(kGB);
  slow.during_load = [gate] { gate->Wait(); };
  f.factory->Set("a", slow);
  f.Start({"a", "b"});
  ModelStatus before = f.StatusOf("a");
  EXPECT_FALSE(before.loaded);
  EXPECT_FALSE(before.loading);
  EXPECT_EQ(before.memory_bytes, 0u);
  EXPECT_EQ(before.estimated_bytes, kGB);
  EXPECT_FALSE(before.last_access.has_value());
  EXPECT_EQ(*before.max_context_window, 4096);
  EXPECT_EQ(before.type, "llama");
  std::thread t([&] { EXPECT_TRUE(f.Touch("a").ok()); });
  gate->WaitEntered();
  EXPECT_TRUE(f.StatusOf("a").loading);
  EXPECT_FALSE(f.StatusOf("a").loaded);
  EXPECT_EQ(f.pool->Memory().committed[0], kGB);  // reserved while it loads
  gate->Open();
  t.join();
  ModelStatus after = f.StatusOf("a");
  EXPECT_TRUE(after.loaded);
  EXPECT_FALSE(after.loading);
  EXPECT_EQ(after.memory_bytes, kGB);
  EXPECT_EQ(*after.last_access, f.now->load());
}

TEST(EnginePoolLoad, OrphanedEngineIsReleasedWhenTheEntryGoesMidLoad) {
  PoolFixture f;
  auto gate = std::make_shared<testing::Gate>();
  FakeModelSpec slow = Size(kGB);
  slow.during_load = [gate] { gate->Wait(); };
  f.factory->Set("a", slow);
  f.Start({"a"});
  std::thread t([&] {
    PoolError e = f.Touch("a", 60);
    EXPECT_EQ(e.code, PoolErrorCode::kShutdown);
  });
  gate->WaitEntered();
  std::thread stopper([&] { f.pool->Shutdown(); });
  ASSERT_TRUE(testing::WaitFor([&] { return f.pool->Requests().waiting == 0; }));
  gate->Open();
  stopper.join();
  t.join();
  auto engine = f.factory->Last("a");
  ASSERT_NE(engine, nullptr);
  EXPECT_TRUE(engine->stopped);  // the engine that finished loading after the entry went was stopped
  EXPECT_FALSE(f.Loaded("a"));
}

TEST(EnginePoolLoad, MissingPathRemovesAnUnloadedEntry) {
  PoolFixture f;
  f.Start({"a", "b"});
  std::filesystem::remove_all(f.root + "/a");
  PoolError e = f.Touch("a");
  EXPECT_EQ(e.code, PoolErrorCode::kNotFound);
  EXPECT_EQ(f.pool->Models().size(), 1u);
  EXPECT_EQ(f.Touch("nope").code, PoolErrorCode::kNotFound);
  EXPECT_NE(f.Touch("nope").message.find("Available models: b"), std::string::npos);
}

TEST(EnginePoolLoad, PinnedModelsArePreloadedAndNeverEvicted) {
  const std::string dir = ::llmhost::testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/model_settings.json", R"({"models":{"a":{"pinned":true}}})").ok());
  PoolFixture f;
  f.options.settings_path = dir + "/model_settings.json";
  f.factory->Set("a", Size(5 * kGB));
  f.factory->Set("b", Size(3 * kGB));
  f.factory->Set("c", Size(3 * kGB));
  f.Start({"a", "b", "c"});
  f.pool->PreloadPinned();
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"a"});
  EXPECT_TRUE(f.StatusOf("a").pinned);
  ASSERT_TRUE(f.Touch("b").ok());
  ASSERT_TRUE(f.Touch("c").ok());  // 5 + 3 + 3 > 8.5: b goes, never the pinned a
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"a", "c"}));
}

TEST(EnginePoolLoad, SettingsChangeReloadsOnceTheModelDrains) {
  PoolFixture f;
  f.Start({"a"});
  AcquireResult held = f.pool->Acquire("a");
  ASSERT_TRUE(held.ok());
  auto s = f.pool->UpdateSettings("a", nlohmann::json{{"max_context_window", 2048}});
  ASSERT_TRUE(s.ok());
  // Sampling-only changes apply at once without a reload.
  ASSERT_TRUE(f.pool->UpdateSettings("a", nlohmann::json{{"sampling", {{"temperature", 0.3}}}}).ok());
  std::atomic<bool> got{false};
  std::unique_ptr<ModelLease> later;
  f.pool->AcquireAsync("a", [&](AcquireResult r) {
    later = std::move(r.lease);
    got = true;
  });
  EXPECT_EQ(f.factory->Loads().size(), 1u);
  EXPECT_FALSE(got);  // deferred while the old engine is leased (the reference answers 409)
  held.lease.reset();
  ASSERT_TRUE(testing::WaitFor([&] { return got.load(); }));
  ASSERT_NE(later, nullptr);
  EXPECT_EQ(f.factory->Loads(), (std::vector<std::string>{"a", "a"}));
  EXPECT_EQ(*later->settings().max_context_window, 2048);
  EXPECT_DOUBLE_EQ(*later->settings().sampling.temperature, 0.3);
  EXPECT_TRUE(f.factory->engines["a"][0]->stopped);
}

TEST(EnginePoolResolve, ExactCaseInsensitiveAliasProviderPrefixLastComponent) {
  PoolFixture f;
  f.Start({"Qwen3-8B", "mlx-community/Qwen3-8B-4bit", "o1/Tiny", "o2/Tiny", "abc", "ABC"});
  ASSERT_TRUE(f.pool->UpdateSettings("Qwen3-8B", nlohmann::json{{"alias", "fast"}}).ok());
  auto id = [&](const std::string& n) {
    auto r = f.pool->Resolve(n);
    if (r.ok()) return *r;
    std::string err = "<";
    err += StatusCodeName(r.status().code());
    err += ">";
    return err;
  };
  EXPECT_EQ(id("Qwen3-8B"), "Qwen3-8B");
  EXPECT_EQ(id("qwen3-8b"), "Qwen3-8B");
  EXPECT_EQ(id("fast"), "Qwen3-8B");
  EXPECT_EQ(id("FAST"), "Qwen3-8B");
  EXPECT_EQ(id("openai/Qwen3-8B"), "Qwen3-8B");
  EXPECT_EQ(id("openai/fast"), "Qwen3-8B");
  EXPECT_EQ(id("mlx-community/Qwen3-8B-4bit"), "mlx-community/Qwen3-8B-4bit");
  EXPECT_EQ(id("Qwen3-8B-4bit"), "mlx-community/Qwen3-8B-4bit");
  EXPECT_EQ(id("Tiny"), "<NotFound>");  // ambiguous last component
  EXPECT_EQ(id("o2/tiny"), "o2/Tiny");
  EXPECT_EQ(id("ABC"), "ABC");  // exact preferred
  EXPECT_EQ(id("abc"), "abc");
  EXPECT_EQ(id("Abc"), "<NotFound>");  // two case-insensitive matches
  EXPECT_EQ(id("gpt-5"), "<NotFound>");
}

TEST(EnginePoolResolve, FallbackToTheDefaultModel) {
  PoolFixture f;
  f.options.model_fallback = true;
  f.Start({"a", "b"});
  EXPECT_FALSE(f.pool->Resolve("gpt-5").ok());
  ASSERT_TRUE(f.pool->UpdateSettings("b", nlohmann::json{{"default", true}}).ok());
  EXPECT_EQ(*f.pool->Resolve("gpt-5"), "b");
  EXPECT_FALSE(f.pool->UpdateSettings("a", nlohmann::json{{"default", true}}).ok());  // one default
}

TEST(EnginePoolDiscovery, RediscoveryMergeRules) {
  PoolFixture f;
  FakeModelSpec bad = Size(kGB);
  bad.fail = true;
  f.factory->Set("broken", bad);
  f.Start({"a", "b", "broken"});
  ASSERT_TRUE(f.Touch("a").ok());
  EXPECT_EQ(f.Touch("broken").code, PoolErrorCode::kUnavailable);
  // a (loaded) and b (unloaded) vanish from disk; a new model appears.
  std::filesystem::remove_all(f.root + "/a");
  std::filesystem::remove_all(f.root + "/b");
  std::filesystem::create_directories(f.root + "/c");
  ASSERT_TRUE(WriteFileAtomic(f.root + "/c/config.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomic(f.root + "/c/model.safetensors", "weights").ok());
  auto engine_a = f.factory->Last("a");
  f.pool->Rediscover();
  std::vector<std::string> ids;
  for (const auto& m : f.pool->Models()) ids.push_back(m.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "broken", "c"}));  // loaded a kept, stale b dropped
  EXPECT_TRUE(f.Loaded("a"));
  EXPECT_FALSE(engine_a->stopped);  // the same entry and engine
  EXPECT_FALSE(f.StatusOf("broken").load_error.has_value());  // rebuilt: failure cleared
  // A pinned flag changed in the settings is refreshed on the live entry.
  ASSERT_TRUE(f.pool->SetPinned("a", true).ok());
  f.pool->Rediscover();
  EXPECT_TRUE(f.StatusOf("a").pinned);
}

}  // namespace
}  // namespace llmhost::engine_pool_test
