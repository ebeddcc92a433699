// The KV growth of loaded engines through the pool (pool_kv_budget.cpp):
// claims granted under the soft target and counted in the committed bytes,
// returned again; a claim that an idle model's memory could cover is refused
// while the manager evicts that model, then granted; one that busy models'
// memory blocks waits; none above the ceiling; none after an unload.
#include <gtest/gtest.h>

#include "fake_engine.h"

namespace llmhost::pool_kv_test {
namespace {

using testing::kGB;
using testing::PoolFixture;
using testing::Spec;
using testing::WaitFor;

KvBudget& BudgetOf(PoolFixture& f, const std::string& id) { return *f.factory->Last(id)->kv_budget; }

TEST(PoolKv, ClaimsAreCountedAndReturned) {
  PoolFixture f;
  f.factory->Set("a", Spec(2 * kGB));
  f.Start({"a"});  // ceiling 10 GiB, soft target 9
  ASSERT_TRUE(f.Touch("a").ok());
  KvBudget& b = BudgetOf(f, "a");
  EXPECT_EQ(f.pool->Memory().committed[0], 2 * kGB);
  EXPECT_TRUE(b.Claim(3 * kGB));
  EXPECT_EQ(f.pool->Memory().committed[0], 5 * kGB);
  EXPECT_EQ(f.StatusOf("a").memory_bytes, 5 * kGB) << "the model's memory shows its KV";
  EXPECT_TRUE(b.Claim(4 * kGB)) << "9 GiB: at the soft target";
  EXPECT_TRUE(b.Claim(kGB)) << "above the soft target, under the ceiling, nothing to evict";
  EXPECT_FALSE(b.Claim(kGB)) << "never above the ceiling";
  b.Return(5 * kGB);
  EXPECT_EQ(f.pool->Memory().committed[0], 5 * kGB);
  b.Return(100 * kGB);  // more than was claimed: only what was
  EXPECT_EQ(f.pool->Memory().committed[0], 2 * kGB);
  // After an unload the budget holds nothing and grants nothing.
  ASSERT_TRUE(b.Claim(kGB));
  ASSERT_TRUE(f.pool->Unload("a").ok());
  EXPECT_EQ(f.pool->Memory().committed[0], 0u);
  b.Return(kGB);
  EXPECT_EQ(f.pool->Memory().committed[0], 0u);
  EXPECT_FALSE(b.Claim(kGB));
}

TEST(PoolKv, AnIdleModelIsEvictedForAClaim) {
  PoolFixture f;
  f.factory->Set("a", Spec(2 * kGB));
  f.factory->Set("idle", Spec(5 * kGB));
  f.Start({"a", "idle"});
  ASSERT_TRUE(f.Touch("idle").ok());
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(r.ok());
  KvBudget& b = BudgetOf(f, "a");
  // 7 GiB committed + 3 > 9: the idle model could make room.
  EXPECT_FALSE(b.Claim(3 * kGB));
  ASSERT_TRUE(WaitFor([&] { return !f.Loaded("idle"); })) << "the manager evicts the idle model";
  // Its bytes are released just after it stops being listed: retried until then.
  EXPECT_TRUE(WaitFor([&] { return b.Claim(3 * kGB); })) << "the retried claim fits";
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"a"});
}

TEST(PoolKv, MemoryOfBusyModelsMakesAClaimWaitUntilTheyDrain) {
  PoolFixture f;
  f.factory->Set("a", Spec(2 * kGB));
  f.factory->Set("busy", Spec(7 * kGB));
  f.Start({"a", "busy"});
  AcquireResult busy = f.pool->Acquire("busy");
  AcquireResult r = f.pool->Acquire("a");
  ASSERT_TRUE(busy.ok() && r.ok());
  KvBudget& b = BudgetOf(f, "a");
  EXPECT_FALSE(b.Claim(2 * kGB)) << "9 + 2 > the 10 GiB ceiling; the busy model cannot be evicted";
  EXPECT_TRUE(f.Loaded("busy"));
  busy.lease.reset();  // its request ends: now it is idle
  EXPECT_FALSE(b.Claim(2 * kGB)) << "refused once more while the manager evicts it";
  ASSERT_TRUE(WaitFor([&] { return !f.Loaded("busy"); }));
  EXPECT_TRUE(WaitFor([&] { return b.Claim(2 * kGB); })) << "fits once the evicted model's bytes are released";
}

}  // namespace
}  // namespace llmhost::pool_kv_test
