// Leases, manual unload, TTL and the settle barrier (spec rules 15–21 and
// section 4 "engine pool": leases, TTL, settle barrier).
#include <gtest/gtest.h>

#include "fake_engine.h"
#include "pool/engine_pool.h"

namespace llmhost::pool_leases_test {
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

// ---- leases -------------------------------------------------------------------

TEST(PoolLeases, CountedWhileHeldAndNeverBelowZero) {
  PoolFixture f;
  f.Start({"a"});
  EXPECT_EQ(f.StatusOf("a").active_requests, 0);
  AcquireResult r1 = f.pool->Acquire("a");
  AcquireResult r2 = f.pool->Acquire("a");
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(f.StatusOf("a").active_requests, 2);
  EXPECT_EQ(f.pool->Requests().active, 2);
  // Released from another thread (an engine's executor in the server).
  std::thread([&] { r1.lease.reset(); }).join();
  r2.lease.reset();
  EXPECT_EQ(f.StatusOf("a").active_requests, 0);
  EXPECT_EQ(f.pool->Requests().active, 0);
}

TEST(PoolLeases, LeasedAndActiveModelsAreNeverEvicted) {
  PoolFixture f;
  f.factory->Set("a", Size(6 * kGB));
  f.factory->Set("b", Size(6 * kGB));  // the pair exceeds the 10 GiB ceiling
  f.Start({"a", "b"});
  AcquireResult held = f.pool->Acquire("a");
  ASSERT_TRUE(held.ok());
  // b must wait for a (leased): with a short wait it times out with 503.
  PoolError e = f.Touch("b", 0.05);
  EXPECT_EQ(e.code, PoolErrorCode::kTimeout);
  EXPECT_GT(e.retry_after_s, 0);
  EXPECT_TRUE(f.Loaded("a"));
  held.lease.reset();
  // Active requests in the engine (no lease) count as busy too.
  f.factory->Last("a")->active = 1;
  EXPECT_EQ(f.Touch("b", 0.05).code, PoolErrorCode::kTimeout);
  f.factory->Last("a")->active = 0;
  EXPECT_TRUE(f.Touch("b").ok());
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
}

TEST(PoolLeases, AbortHandlerRunsOnceAndAtOnceWhenAlreadyAborted) {
  PoolFixture f;
  f.Start({"a"});
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok());
  std::atomic<int> calls{0};
  std::atomic<int> reason{0};
  r.lease->SetAbortHandler([&](AbortReason why) {
    calls++;
    reason = static_cast<int>(why);
  });
  UnloadResult u = f.pool->Unload("a");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u.outcome, UnloadOutcome::kPending);  // HTTP 202
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(reason.load(), static_cast<int>(AbortReason::kModelUnloaded));
  EXPECT_EQ(r.lease->abort_reason(), AbortReason::kModelUnloaded);
  // A handler set after the abort runs at once.
  std::atomic<int> late{0};
  r.lease->SetAbortHandler([&](AbortReason) { late++; });
  EXPECT_EQ(late.load(), 1);
  f.pool->Unload("a");  // again: still pending, no second call
  EXPECT_EQ(calls.load(), 1);
}

// ---- manual unload (rules 17, 18) ----------------------------------------------

TEST(PoolUnload, IdleEngineStopsImmediately) {
  PoolFixture f;
  f.factory->Set("a", Size(3 * kGB));
  f.Start({"a"});
  ASSERT_TRUE(f.Touch("a").ok());
  UnloadResult u = f.pool->Unload("a");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u.outcome, UnloadOutcome::kUnloaded);  // HTTP 200
  EXPECT_FALSE(f.Loaded("a"));
  EXPECT_TRUE(f.factory->Last("a")->stopped);
  EXPECT_EQ(f.pool->Memory().committed[0], 0u);
  EXPECT_TRUE(f.pool->Unload("a").ok());  // not loaded: nothing to do
  EXPECT_EQ(f.pool->Unload("zzz").error.code, PoolErrorCode::kNotFound);
}

TEST(PoolUnload, BusyModelUnloadsAfterDrainAndRefusesNewRequestsMeanwhile) {
  PoolFixture f;
  f.Start({"a"});
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok());
  UnloadResult u = f.pool->Unload("a");
  EXPECT_EQ(u.outcome, UnloadOutcome::kPending);
  EXPECT_TRUE(f.StatusOf("a").pending_unload);
  PoolError busy = f.Touch("a");
  EXPECT_EQ(busy.code, PoolErrorCode::kUnloading);
  EXPECT_TRUE(f.Loaded("a"));  // waits for quiescence
  r.lease.reset();             // the aborted request ends
  ASSERT_TRUE(testing::WaitFor([&] { return !f.Loaded("a") && !f.StatusOf("a").pending_unload; }));
  EXPECT_TRUE(f.factory->Last("a")->stopped);
  EXPECT_TRUE(f.Touch("a").ok());  // and loads again on demand
}

TEST(PoolUnload, PendingUnloadOverridesPinning) {
  PoolFixture f;
  f.Start({"a"});
  ASSERT_TRUE(f.pool->SetPinned("a", true).ok());
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(f.pool->Unload("a").outcome, UnloadOutcome::kPending);
  r.lease.reset();
  ASSERT_TRUE(testing::WaitFor([&] { return !f.Loaded("a"); }));
}

TEST(PoolUnload, LoadingModelCannotBeUnloaded) {
  PoolFixture f;
  auto gate = std::make_shared<testing::Gate>();
  FakeModelSpec slow;
  slow.during_load = [gate] { gate->Wait(); };
  f.factory->Set("a", slow);
  f.Start({"a"});
  std::thread t([&] { EXPECT_TRUE(f.Touch("a").ok()); });
  gate->WaitEntered();
  UnloadResult u = f.pool->Unload("a");
  EXPECT_EQ(u.error.code, PoolErrorCode::kLoading);
  EXPECT_EQ(f.pool->UnloadIfIdle("a").code, PoolErrorCode::kBusy);
  gate->Open();
  t.join();
}

TEST(PoolUnload, UnloadIfIdleRefusesPinnedLeasedAndActive) {
  PoolFixture f;
  f.Start({"a", "p"});
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.pool->SetPinned("p", true).ok());
  ASSERT_TRUE(f.Touch("p").ok());
  EXPECT_EQ(f.pool->UnloadIfIdle("p").code, PoolErrorCode::kBusy);
  AcquireResult r = f.pool->Acquire("a");
  PoolError leased = f.pool->UnloadIfIdle("a");
  EXPECT_EQ(leased.code, PoolErrorCode::kBusy);
  EXPECT_NE(leased.message.find("serving 1 requests"), std::string::npos);
  EXPECT_EQ(r.lease->abort_reason(), AbortReason::kNone);  // never aborts
  r.lease.reset();
  f.factory->Last("a")->active = 2;
  EXPECT_EQ(f.pool->UnloadIfIdle("a").code, PoolErrorCode::kBusy);
  f.factory->Last("a")->active = 0;
  EXPECT_TRUE(f.pool->UnloadIfIdle("a").ok());
  EXPECT_FALSE(f.Loaded("a"));
  EXPECT_TRUE(f.Loaded("p"));
}

// ---- TTL (rule 21) --------------------------------------------------------------

TEST(PoolTtl, GlobalIdleTimeoutExpiresIdleModels) {
  PoolFixture f;
  f.options.idle_ttl_s = 60;
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  f.Advance(30);
  ASSERT_TRUE(f.Touch("b").ok());
  f.Advance(29);
  EXPECT_EQ(f.pool->ExpireIdle(), 0);  // within the TTL
  f.Advance(2);                        // a: 61 s idle, b: 31 s
  EXPECT_EQ(f.pool->ExpireIdle(), 1);
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  EXPECT_EQ(*f.StatusOf("b").ttl_seconds, 60);
}

TEST(PoolTtl, NoTtlPinnedAndPerModelOverrides) {
  PoolFixture f;
  f.Start({"keep", "pinned", "short"});
  ASSERT_TRUE(f.pool->SetPinned("pinned", true).ok());
  ASSERT_TRUE(f.pool->UpdateSettings("pinned", nlohmann::json{{"ttl_seconds", 1}}).ok());
  ASSERT_TRUE(f.pool->UpdateSettings("short", nlohmann::json{{"ttl_seconds", 10}}).ok());
  for (const char* id : {"keep", "pinned", "short"}) ASSERT_TRUE(f.Touch(id).ok());
  f.Advance(1e6);
  EXPECT_EQ(f.pool->ExpireIdle(), 1);  // no global TTL: "keep" stays; pinned never expires
  EXPECT_EQ(f.LoadedIds(), (std::vector<std::string>{"keep", "pinned"}));
  EXPECT_FALSE(f.StatusOf("keep").ttl_seconds.has_value());
}

TEST(PoolTtl, PerModelTtlOverridesTheGlobalOne) {
  PoolFixture f;
  f.options.idle_ttl_s = 1000;
  f.Start({"a", "b"});
  ASSERT_TRUE(f.pool->UpdateSettings("a", nlohmann::json{{"ttl_seconds", 10}}).ok());
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());
  f.Advance(11);
  EXPECT_EQ(f.pool->ExpireIdle(), 1);
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
}

TEST(PoolTtl, KeepAliveOverridesTheTtlForOneLoad) {
  PoolFixture f;
  f.options.idle_ttl_s = 1000;
  f.Start({"a", "b"});
  EXPECT_TRUE(f.pool->SetKeepAlive("a", 5).ok()) << "not loaded: nothing to keep";
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.Touch("b").ok());
  ASSERT_TRUE(f.pool->SetKeepAlive("a", 5).ok());
  ASSERT_TRUE(f.pool->SetKeepAlive("b", -1).ok());
  EXPECT_EQ(*f.StatusOf("a").ttl_seconds, 5);
  EXPECT_FALSE(f.StatusOf("b").ttl_seconds.has_value()) << "negative: no expiry";
  f.Advance(6);
  EXPECT_EQ(f.pool->ExpireIdle(), 1);
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  f.Advance(1e6);
  EXPECT_EQ(f.pool->ExpireIdle(), 0);
  // Loaded again, "a" has the global TTL: the keep-alive was for that load.
  ASSERT_TRUE(f.Touch("a").ok());
  EXPECT_EQ(*f.StatusOf("a").ttl_seconds, 1000);
  EXPECT_EQ(f.pool->SetKeepAlive("nope", 1).code, PoolErrorCode::kNotFound);
}

TEST(PoolTtl, ActiveModelsAreSkippedAndTheirIdleTimeRestarts) {
  PoolFixture f;
  f.options.idle_ttl_s = 60;
  f.Start({"a"});
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok());
  f.Advance(100);
  EXPECT_EQ(f.pool->ExpireIdle(), 0);
  EXPECT_EQ(*f.StatusOf("a").last_access, f.now->load());  // refreshed
  r.lease.reset();  // release refreshes it too
  f.Advance(59);
  EXPECT_EQ(f.pool->ExpireIdle(), 0);
  f.Advance(2);
  EXPECT_EQ(f.pool->ExpireIdle(), 1);
}

// ---- settle barrier (rule 15) -----------------------------------------------------

TEST(PoolSettle, SettlesOnTheFirstRound) {
  PoolFixture f;
  f.factory->Set("a", Size(5 * kGB, /*device_active=*/5 * kGB));  // freed when it stops
  f.Start({"a"});
  ASSERT_TRUE(f.Touch("a").ok());
  ASSERT_TRUE(f.pool->Unload("a").ok());
  EXPECT_EQ(f.sleeps->load(), 0);
}

TEST(PoolSettle, WaitsSeveralRoundsAndDecrementsTheAccumulatorAfterwards) {
  PoolFixture f;
  f.factory->Set("a", Size(5 * kGB));
  f.Start({"a"});
  ASSERT_TRUE(f.Touch("a").ok());
  f.probe->set_footprint(5 * kGB);
  std::vector<uint64_t> committed_during;
  uint64_t footprint = 5 * kGB;
  f.on_sleep = [&] {
    committed_during.push_back(f.pool->Memory().committed[0]);
    footprint -= kGB;  // the kernel returns the pages over time
    f.probe->set_footprint(footprint);
  };
  ASSERT_TRUE(f.pool->Unload("a").ok());
  // Needs a drop of 5 − max(2 GiB, 5 %) = 3 GiB: three rounds.
  EXPECT_EQ(f.sleeps->load(), 3);
  EXPECT_EQ(committed_during, (std::vector<uint64_t>{5 * kGB, 5 * kGB, 5 * kGB}));
  EXPECT_EQ(f.pool->Memory().committed[0], 0u);
}

TEST(PoolSettle, TimeoutRunsEmergencyReclaim) {
  PoolFixture f;
  f.factory->Set("a", Size(5 * kGB));
  f.factory->Set("other", Size(kGB));
  f.Start({"a", "other"});
  ASSERT_TRUE(f.Touch("other").ok());
  ASSERT_TRUE(f.Touch("a").ok());
  f.probe->set_footprint(6 * kGB);  // never drops
  ASSERT_TRUE(f.pool->Unload("a").ok());
  EXPECT_EQ(f.sleeps->load(), 10);
  EXPECT_GE(f.factory->Last("other")->caches_released.load(), 3);  // reclaim rounds
  EXPECT_EQ(f.pool->Memory().committed[0], kGB);
}

TEST(PoolSettle, ProportionalToleranceForLargeModelsFloorForSmallOnes) {
  {
    PoolFixture f;
    f.factory->Set("huge", Size(100 * kGB));
    f.Start({"huge"}, 200 * kGB);
    f.SetMemory(256 * kGB, 256 * kGB);
    ASSERT_TRUE(f.Touch("huge").ok());
    f.probe->set_footprint(100 * kGB);
    f.on_sleep = [&] { f.probe->set_footprint(4 * kGB); };  // dropped 96 GiB
    ASSERT_TRUE(f.pool->Unload("huge").ok());
    // Tolerance 5 GiB (5 % > 2 GiB): a 96 GiB drop settles (a 2 GiB floor would need 98).
    EXPECT_EQ(f.sleeps->load(), 1);
  }
  {
    PoolFixture f;
    f.factory->Set("small", Size(kGB));
    f.Start({"small"});
    ASSERT_TRUE(f.Touch("small").ok());
    f.probe->set_footprint(3 * kGB);  // does not move at all
    ASSERT_TRUE(f.pool->Unload("small").ok());
    EXPECT_EQ(f.sleeps->load(), 0);  // 1 GiB is within the 2 GiB floor
  }
}

TEST(PoolSettle, BailsOutWhileAnotherModelIsServing) {
  PoolFixture f;
  f.factory->Set("a", Size(5 * kGB));
  f.factory->Set("b", Size(kGB));
  f.Start({"a", "b"});
  ASSERT_TRUE(f.Touch("a").ok());
  AcquireResult busy = f.pool->Acquire("b");
  ASSERT_TRUE(busy.ok());
  f.probe->set_footprint(6 * kGB);
  ASSERT_TRUE(f.pool->Unload("a").ok());
  EXPECT_EQ(f.sleeps->load(), 0);  // indeterminate: b's activity moves the readings
  EXPECT_EQ(f.pool->Memory().committed[0], kGB);
}

}  // namespace
}  // namespace llmhost::pool_leases_test
