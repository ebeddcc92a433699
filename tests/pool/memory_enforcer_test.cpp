// Process memory enforcer (spec section 2 and section 4 "process memory
// enforcer"): adaptive polling, check-and-enforce, guard disabled, levels,
// admission pause, the hard-pressure ladder, emergency.
//
// Usage is driven through the fake engines' device-active bytes (which drop
// when an engine stops) or the probe's footprint. Custom ceiling 10 GiB:
// soft 8.5 GiB, hard 9.5 GiB.
#include "pool/memory_enforcer.h"

#include <gtest/gtest.h>

#include "fake_engine.h"

namespace llmhost::memory_enforcer_test {
namespace {

using testing::kGB;
using testing::PoolFixture;
using testing::FakeModelSpec;
using testing::WaitFor;

bool Has(const EnforcerTick& t, const std::string& action) {
  return std::find(t.actions.begin(), t.actions.end(), action) != t.actions.end();
}

// Loads `ids` (1 GiB estimates), then sets each engine's live bytes.
void LoadWithUsage(PoolFixture& f, const std::vector<std::pair<std::string, uint64_t>>& models) {
  for (const auto& [id, bytes] : models) {
    ASSERT_TRUE(f.Touch(id).ok());
    f.Advance(1);  // distinct last_access: LRU order = load order
  }
  for (const auto& [id, bytes] : models) f.factory->Last(id)->device_active = bytes;
}

TEST(MemoryEnforcer, AdaptivePollingIntervals) {
  PoolFixture f;
  f.Start({"a"});
  MemoryEnforcer e(f.pool.get());
  EXPECT_EQ(e.PollInterval(PressureLevel::kOk), 30);  // nothing loaded
  ASSERT_TRUE(f.Touch("a").ok());
  EXPECT_EQ(e.PollInterval(PressureLevel::kOk), 10);  // loaded, idle
  EXPECT_EQ(e.PollInterval(PressureLevel::kSoft), 1);  // pressure
  {
    AcquireResult r = f.pool->Acquire("a");
    EXPECT_EQ(e.PollInterval(PressureLevel::kOk), 1);  // active
  }
  EXPECT_EQ(e.PollInterval(PressureLevel::kOk), 10);
  e.Wake();
  EXPECT_EQ(e.PollInterval(PressureLevel::kOk), 1);  // woken: fast for a while
}

TEST(MemoryEnforcer, WakeInterruptsTheSleep) {
  PoolFixture f;
  f.Start({"a", "b"});
  LoadWithUsage(f, {{"a", 0}, {"b", 0}});
  EnforcerOptions o;
  o.idle_interval_s = o.empty_interval_s = 3600;  // it would sleep an hour
  o.fast_after_wake_s = 0;
  MemoryEnforcer e(f.pool.get(), o);
  e.Start();
  f.factory->Last("a")->device_active = 10 * kGB;  // hard pressure appears
  e.Wake();
  ASSERT_TRUE(WaitFor([&] { return !f.Loaded("a"); }));
  e.Stop();
}

TEST(MemoryEnforcer, NoActionUnderOrAtTheLimit) {
  PoolFixture f;
  f.Start({"a", "b"});
  const uint64_t soft = f.pool->Memory().host.soft_bytes;  // 8.5 GiB
  LoadWithUsage(f, {{"a", 4 * kGB}, {"b", soft - 4 * kGB}});  // exactly at the limit
  MemoryEnforcer e(f.pool.get());
  EnforcerTick t = e.CheckAndEnforce();
  EXPECT_EQ(t.level, PressureLevel::kOk);
  EXPECT_TRUE(t.actions.empty());
  EXPECT_FALSE(t.paused);
  EXPECT_EQ(f.LoadedIds().size(), 2u);
}

TEST(MemoryEnforcer, EvictsWhenOverAndStopsOnceUnderTheSoftTarget) {
  PoolFixture f;
  f.Start({"a", "b", "c"});
  LoadWithUsage(f, {{"a", 5 * kGB}, {"b", 5 * kGB}, {"c", 5 * kGB}});  // 15 GiB: hard
  MemoryEnforcer e(f.pool.get());
  EnforcerTick t = e.CheckAndEnforce();
  EXPECT_TRUE(Has(t, "evict"));
  EXPECT_EQ(std::count(t.actions.begin(), t.actions.end(), "evict"), 2);  // several
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"c"});  // LRU first
  EXPECT_EQ(t.level, PressureLevel::kOk);
  EXPECT_FALSE(t.paused);
}

TEST(MemoryEnforcer, StopsWhenEverythingIsPinned) {
  PoolFixture f;
  f.Start({"a", "b"});
  ASSERT_TRUE(f.pool->SetPinned("a", true).ok());
  ASSERT_TRUE(f.pool->SetPinned("b", true).ok());
  LoadWithUsage(f, {{"a", 5 * kGB}, {"b", 5 * kGB}});
  MemoryEnforcer e(f.pool.get());
  EnforcerTick t = e.CheckAndEnforce();
  EXPECT_EQ(t.actions, std::vector<std::string>{"reclaim"});
  EXPECT_EQ(f.LoadedIds().size(), 2u);
  EXPECT_TRUE(t.paused);  // hard: new requests wait
}

TEST(MemoryEnforcer, SoftLevelEvictsOnlyWithSeveralUnpinnedAndPausesWhileItActs) {
  PoolFixture f;
  f.Start({"a", "b"});
  LoadWithUsage(f, {{"a", 4 * kGB}, {"b", 5 * kGB}});  // 9 GiB: soft band
  MemoryEnforcer e(f.pool.get());
  EnforcerTick t = e.CheckAndEnforce();
  EXPECT_EQ(t.actions, std::vector<std::string>{"evict"});
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  EXPECT_EQ(t.level, PressureLevel::kOk);
  // One unpinned model alone in the soft band: left alone, and not paused
  // (it was admitted above the soft target and must keep serving).
  f.factory->Last("b")->device_active = 9 * kGB;
  t = e.CheckAndEnforce();
  EXPECT_EQ(t.level, PressureLevel::kSoft);
  EXPECT_TRUE(t.actions.empty());
  EXPECT_FALSE(t.paused);
  EXPECT_TRUE(f.Loaded("b"));
}

TEST(MemoryEnforcer, AdmissionPauseIsSetAtHardAndCleared) {
  PoolFixture f;
  f.Start({"a"});
  ASSERT_TRUE(f.pool->SetPinned("a", true).ok());
  LoadWithUsage(f, {{"a", 9 * kGB + kGB / 2 + 1}});
  MemoryEnforcer e(f.pool.get());
  EXPECT_TRUE(e.CheckAndEnforce().paused);
  EXPECT_TRUE(f.pool->admission_paused());
  EXPECT_EQ(f.pool->Acquire("a", 0.01).error.code, PoolErrorCode::kTimeout);
  f.factory->Last("a")->device_active = kGB;
  EXPECT_FALSE(e.CheckAndEnforce().paused);
  EXPECT_FALSE(f.pool->admission_paused());
  EXPECT_TRUE(f.pool->Acquire("a", 0).ok());
}

TEST(MemoryEnforcer, HardShrinksTheHotCacheFirstThenAbortsTheLruBusyModel) {
  PoolFixture f;
  f.Start({"a", "b"});
  LoadWithUsage(f, {{"a", 5 * kGB}, {"b", 5 * kGB}});
  AcquireResult ra = f.pool->Acquire("a");
  AcquireResult rb = f.pool->Acquire("b");
  std::atomic<int> a_aborted{0}, b_aborted{0};
  ra.lease->SetAbortHandler([&](AbortReason r) {
    if (r == AbortReason::kMemoryPressure) a_aborted++;
  });
  rb.lease->SetAbortHandler([&](AbortReason) { b_aborted++; });
  std::vector<std::string> calls;
  EnforcerOptions o;
  o.shrink_hot_cache = [&](uint64_t target) {
    calls.push_back("shrink to " + std::to_string(target >> 20));
    return false;  // nothing to shrink
  };
  MemoryEnforcer e(f.pool.get(), o);
  f.Advance(5);
  rb.lease.reset();  // b used last
  rb = f.pool->Acquire("b");
  EnforcerTick t = e.CheckAndEnforce();
  ASSERT_EQ(calls.size(), 1u);  // before anything is aborted
  EXPECT_EQ(t.actions, std::vector<std::string>{"abort_busy"});
  EXPECT_EQ(a_aborted.load(), 1);  // the least recently used busy model
  EXPECT_EQ(b_aborted.load(), 0);
  EXPECT_TRUE(f.Loaded("a"));     // kept loaded (not an emergency)
  EXPECT_FALSE(f.StatusOf("a").pending_unload);
}

TEST(MemoryEnforcer, HardAbortsALoadWhenNoVictimButEvictsBeforeAborting) {
  PoolFixture f;
  auto gate = std::make_shared<testing::Gate>();
  FakeModelSpec slow;
  slow.resident = kGB;
  slow.during_load = [gate] { gate->Wait(); };
  f.factory->Set("loading", slow);
  f.Start({"idle", "loading", "pinned"});
  ASSERT_TRUE(f.pool->SetPinned("pinned", true).ok());
  LoadWithUsage(f, {{"idle", 0}, {"pinned", 0}});
  std::thread t([&] {
    PoolError e = f.Touch("loading");
    EXPECT_EQ(e.code, PoolErrorCode::kAborted);
    EXPECT_NE(e.message.find("load aborted: process memory limit exceeded"), std::string::npos);
  });
  gate->WaitEntered();
  f.factory->Last("idle")->device_active = 5 * kGB;
  f.factory->Last("pinned")->device_active = 5 * kGB;
  MemoryEnforcer e(f.pool.get());
  EnforcerTick tick = e.CheckAndEnforce();  // 10 GiB: the idle model goes first, that suffices
  EXPECT_EQ(tick.actions, std::vector<std::string>{"evict"});
  f.factory->Last("pinned")->device_active = 10 * kGB;
  tick = e.CheckAndEnforce();  // no victim left: abort the load
  EXPECT_EQ(tick.actions, std::vector<std::string>{"abort_loading"});
  gate->Open();
  t.join();
  EXPECT_FALSE(f.Loaded("loading"));
  EXPECT_EQ(f.pool->Memory().committed[0], kGB);  // only the pinned model's estimate
}

TEST(MemoryEnforcer, SoftNeverAbortsALoad) {
  PoolFixture f;
  auto gate = std::make_shared<testing::Gate>();
  FakeModelSpec slow;
  slow.during_load = [gate] { gate->Wait(); };
  f.factory->Set("loading", slow);
  f.Start({"loading", "pinned"});
  ASSERT_TRUE(f.pool->SetPinned("pinned", true).ok());
  LoadWithUsage(f, {{"pinned", 9 * kGB}});  // soft band
  std::thread t([&] { EXPECT_TRUE(f.Touch("loading").ok()); });
  gate->WaitEntered();
  MemoryEnforcer e(f.pool.get());
  EnforcerTick tick = e.CheckAndEnforce();
  EXPECT_EQ(tick.level, PressureLevel::kSoft);
  EXPECT_FALSE(Has(tick, "abort_loading"));
  gate->Open();
  t.join();
  EXPECT_TRUE(f.Loaded("loading"));
}

TEST(MemoryEnforcer, EmergencyAbortsPinnedRequests) {
  PoolFixture f;
  f.Start({"p"});
  ASSERT_TRUE(f.pool->SetPinned("p", true).ok());
  LoadWithUsage(f, {{"p", 13 * kGB}});  // ≥ ceiling + 2 GiB
  AcquireResult r = f.pool->Acquire("p");
  std::atomic<int> aborted{0};
  r.lease->SetAbortHandler([&](AbortReason why) { aborted += why == AbortReason::kMemoryPressure; });
  MemoryEnforcer e(f.pool.get());
  EnforcerTick t = e.CheckAndEnforce();
  EXPECT_TRUE(t.emergency);
  EXPECT_EQ(t.actions, std::vector<std::string>{"abort_all"});
  EXPECT_EQ(aborted.load(), 1);
}

TEST(MemoryEnforcer, EmergencyAfterTwoPollsAtTheCeiling) {
  PoolFixture f;
  f.Start({"p"});
  ASSERT_TRUE(f.pool->SetPinned("p", true).ok());
  LoadWithUsage(f, {{"p", 10 * kGB}});
  MemoryEnforcer e(f.pool.get());
  EXPECT_FALSE(e.CheckAndEnforce().emergency);
  EXPECT_TRUE(e.CheckAndEnforce().emergency);
}

TEST(MemoryEnforcer, EmergencyMarksTheBusyModelForUnload) {
  PoolFixture f;
  f.Start({"a"});
  LoadWithUsage(f, {{"a", 13 * kGB}});
  AcquireResult r = f.pool->Acquire("a");
  MemoryEnforcer e(f.pool.get());
  EnforcerTick t = e.CheckAndEnforce();
  EXPECT_EQ(t.actions, std::vector<std::string>{"abort_busy"});
  EXPECT_TRUE(f.StatusOf("a").pending_unload);
  r.lease.reset();
  ASSERT_TRUE(WaitFor([&] { return !f.Loaded("a"); }));
}

TEST(MemoryEnforcer, GuardDisabledEnforcesNothing) {
  PoolFixture f;
  f.options.guard.tier = GuardTier::kOff;
  f.Start({"a", "b"}, 0);
  LoadWithUsage(f, {{"a", 40 * kGB}, {"b", 40 * kGB}});
  MemoryEnforcer e(f.pool.get());
  EnforcerTick t = e.CheckAndEnforce();
  EXPECT_TRUE(t.actions.empty());
  EXPECT_FALSE(t.paused);
  EXPECT_EQ(f.LoadedIds().size(), 2u);
  MemorySnapshot m = f.pool->Memory();
  EXPECT_EQ(m.host.hard_ceiling, 0u);  // zero limits
  EXPECT_FALSE(m.host.guard_on);
}

TEST(MemoryEnforcer, ExpiresTtlOnEveryPoll) {
  PoolFixture f;
  f.options.idle_ttl_s = 5;
  f.Start({"a"});
  ASSERT_TRUE(f.Touch("a").ok());
  MemoryEnforcer e(f.pool.get());
  EXPECT_TRUE(e.CheckAndEnforce().actions.empty());
  f.Advance(6);
  EXPECT_EQ(e.CheckAndEnforce().actions, std::vector<std::string>{"ttl"});
  EXPECT_FALSE(f.Loaded("a"));
}

// Each budget has its own levels: pressure on a GPU evicts a model held
// there, never a host model that frees nothing on it (even the older one).
TEST(MemoryEnforcer, PressureOnAGpuEvictsAModelOnThatGpu) {
  PoolFixture f;
  f.probe->set_gpus({GpuMemory{0, "H200", 20 * kGB, 20 * kGB, 0, {}}});
  FakeModelSpec g;
  g.on_gpu = true;
  f.factory->Set("g", g);
  f.Start({"g", "h"});
  LoadWithUsage(f, {{"h", kGB}, {"g", 19 * kGB + kGB / 2}});  // over the GPU's hard mark (~18 GiB)
  const MemorySnapshot before = f.pool->Memory();
  EXPECT_EQ(before.level, PressureLevel::kHard);
  EXPECT_EQ(before.worst, GpuBudget(0));
  MemoryEnforcer e(f.pool.get());
  const EnforcerTick t = e.CheckAndEnforce();
  EXPECT_TRUE(Has(t, "evict"));
  EXPECT_EQ(t.level, PressureLevel::kOk);  // after the eviction
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"h"});
  EXPECT_TRUE(f.factory->Last("g")->stopped);
}

}  // namespace
}  // namespace llmhost::memory_enforcer_test
