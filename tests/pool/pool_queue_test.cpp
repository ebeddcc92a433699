// Queue instead of refusing (issue 5): a request for model B while busy
// model A holds the memory waits until A drains and is evicted; fairness
// (models served in the order of their first waiting request; once B waits,
// new requests for A queue behind it); requests for a loading model wait;
// timeouts answer 503 with Retry-After; a model that can never fit gets 507
// at once; a queued request can be cancelled.
//
// Every pair of models here exceeds the 10 GiB ceiling: one loaded at a time.
#include <gtest/gtest.h>

#include <deque>

#include "fake_engine.h"
#include "pool/engine_pool.h"

namespace llmhost::pool_queue_test {
namespace {

using testing::kGB;
using testing::PoolFixture;
using testing::FakeModelSpec;
using testing::WaitFor;

// Collects async acquire results in completion order.
struct Results {
  std::mutex mu;
  std::vector<std::string> order;  // "<label>:ok" or "<label>:<error code>"
  std::map<std::string, std::unique_ptr<ModelLease>> leases;

  AcquireCallback For(const std::string& label) {
    return [this, label](AcquireResult r) {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(label + ":" + (r.ok() ? "ok" : PoolErrorCodeName(r.error.code)));
      if (r.ok()) leases[label] = std::move(r.lease);
    };
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu);
    return order.size();
  }
  std::vector<std::string> Order() {
    std::lock_guard<std::mutex> lock(mu);
    return order;
  }
  void Release(const std::string& label) {
    std::unique_ptr<ModelLease> l;
    {
      std::lock_guard<std::mutex> lock(mu);
      l = std::move(leases[label]);
    }
    l.reset();
  }
};

void SixEach(PoolFixture& f, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    FakeModelSpec s;
    s.resident = 6 * kGB;
    f.factory->Set(id, s);
  }
  f.Start(ids);
}

TEST(PoolQueue, RequestWaitsForTheBusyModelInsteadOf507) {
  PoolFixture f;
  SixEach(f, {"a", "b"});
  AcquireResult a = f.pool->Acquire("a");
  ASSERT_TRUE(a.ok());
  Results res;
  const uint64_t ticket = f.pool->AcquireAsync("b", res.For("b"));
  EXPECT_NE(ticket, 0u);
  ASSERT_TRUE(WaitFor([&] { return f.pool->Requests().memory_blocked; }));
  EXPECT_EQ(res.Count(), 0u);
  EXPECT_EQ(f.StatusOf("b").waiting_requests, 1);
  EXPECT_EQ(f.pool->Requests().waiting, 1);
  a.lease.reset();  // A drains
  ASSERT_TRUE(WaitFor([&] { return res.Count() == 1; }));
  EXPECT_EQ(res.Order(), std::vector<std::string>{"b:ok"});
  EXPECT_EQ(f.LoadedIds(), std::vector<std::string>{"b"});
  EXPECT_EQ(f.factory->Loads(), (std::vector<std::string>{"a", "b"}));
}

TEST(PoolQueue, NewRequestsForTheBusyModelQueueBehindTheWaitingOne) {
  PoolFixture f;
  SixEach(f, {"a", "b"});
  AcquireResult a = f.pool->Acquire("a");
  ASSERT_TRUE(a.ok());
  Results res;
  f.pool->AcquireAsync("b", res.For("b1"));
  ASSERT_TRUE(WaitFor([&] { return f.pool->Requests().memory_blocked; }));
  // A new request for the loaded, busy a is not served: it would keep a busy forever.
  f.pool->AcquireAsync("a", res.For("a2"));
  EXPECT_EQ(res.Count(), 0u);
  a.lease.reset();
  // b loads first; then a2 waits for b's lease, and reloads a after it.
  ASSERT_TRUE(WaitFor([&] { return res.Count() == 1; }));
  EXPECT_EQ(res.Order(), std::vector<std::string>{"b1:ok"});
  res.Release("b1");
  ASSERT_TRUE(WaitFor([&] { return res.Count() == 2; }));
  EXPECT_EQ(res.Order(), (std::vector<std::string>{"b1:ok", "a2:ok"}));
  EXPECT_EQ(f.factory->Loads(), (std::vector<std::string>{"a", "b", "a"}));
}

TEST(PoolQueue, ModelsAreServedInTheOrderOfTheirFirstWaitingRequest) {
  PoolFixture f;
  SixEach(f, {"a", "b", "c"});
  AcquireResult a = f.pool->Acquire("a");
  ASSERT_TRUE(a.ok());
  Results res;
  f.pool->AcquireAsync("c", res.For("c1"));
  f.pool->AcquireAsync("b", res.For("b1"));
  f.pool->AcquireAsync("c", res.For("c2"));
  a.lease.reset();
  ASSERT_TRUE(WaitFor([&] { return res.Count() == 2; }));
  // c's first request came first: both of c's requests are served together.
  auto first = res.Order();
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<std::string>{"c1:ok", "c2:ok"}));
  res.Release("c1");
  res.Release("c2");
  ASSERT_TRUE(WaitFor([&] { return res.Count() == 3; }));
  EXPECT_EQ(res.Order().back(), "b1:ok");
  EXPECT_EQ(f.factory->Loads(), (std::vector<std::string>{"a", "c", "b"}));
}

TEST(PoolQueue, PinnedModelsAreServedWhileOthersWait) {
  PoolFixture f;
  FakeModelSpec small;
  small.resident = 3 * kGB;
  f.factory->Set("p", small);
  f.factory->Set("a", testing::Spec(6 * kGB));
  f.factory->Set("b", testing::Spec(6 * kGB));
  f.Start({"a", "b", "p"});
  ASSERT_TRUE(f.pool->SetPinned("p", true).ok());
  ASSERT_TRUE(f.Touch("p").ok());
  AcquireResult a = f.pool->Acquire("a");
  ASSERT_TRUE(a.ok());
  Results res;
  f.pool->AcquireAsync("b", res.For("b"));
  ASSERT_TRUE(WaitFor([&] { return f.pool->Requests().memory_blocked; }));
  // A pinned model is never a victim: its requests need not queue.
  AcquireResult p = f.pool->Acquire("p", 0);
  EXPECT_TRUE(p.ok());
  a.lease.reset();
  ASSERT_TRUE(WaitFor([&] { return res.Count() == 1; }));
  EXPECT_EQ(res.Order(), std::vector<std::string>{"b:ok"});
}

TEST(PoolQueue, RequestsForALoadingModelWaitForIt) {
  PoolFixture f;
  auto gate = std::make_shared<testing::Gate>();
  FakeModelSpec slow;
  slow.during_load = [gate] { gate->Wait(); };
  f.factory->Set("a", slow);
  f.Start({"a"});
  Results res;
  f.pool->AcquireAsync("a", res.For("1"));
  gate->WaitEntered();
  f.pool->AcquireAsync("a", res.For("2"));
  f.pool->AcquireAsync("a", res.For("3"));
  EXPECT_EQ(res.Count(), 0u);
  gate->Open();
  ASSERT_TRUE(WaitFor([&] { return res.Count() == 3; }));
  EXPECT_EQ(f.factory->Loads(), std::vector<std::string>{"a"});  // loaded once
  EXPECT_EQ(f.StatusOf("a").active_requests, 3);
}

TEST(PoolQueue, TimeoutAnswers503WithRetryAfterAndTheQueueMovesOn) {
  PoolFixture f;
  SixEach(f, {"a", "b"});
  AcquireResult a = f.pool->Acquire("a");
  ASSERT_TRUE(a.ok());
  AcquireResult b = f.pool->Acquire("b", 0.05);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error.code, PoolErrorCode::kTimeout);
  EXPECT_STREQ(PoolErrorCodeName(b.error.code), "model_wait_timeout");
  EXPECT_GE(b.error.retry_after_s, 1);
  EXPECT_FALSE(f.pool->Requests().memory_blocked);  // the timed-out head left the queue
  EXPECT_EQ(f.pool->Requests().waiting, 0);
  // With the head gone, a is served again at once.
  EXPECT_TRUE(f.pool->Acquire("a", 0).ok());
}

TEST(PoolQueue, AModelThatCanNeverFitIsRefusedAtOnce) {
  PoolFixture f;
  f.factory->Set("huge", testing::Spec(20 * kGB));
  f.factory->Set("a", testing::Spec(6 * kGB));
  f.Start({"a", "huge"});
  AcquireResult a = f.pool->Acquire("a");  // busy: but even evicting it would not help
  ASSERT_TRUE(a.ok());
  AcquireResult h = f.pool->Acquire("huge", 60);
  EXPECT_EQ(h.error.code, PoolErrorCode::kTooLarge);
}

TEST(PoolQueue, CancelledWhileQueued) {
  PoolFixture f;
  SixEach(f, {"a", "b"});
  AcquireResult a = f.pool->Acquire("a");
  ASSERT_TRUE(a.ok());
  Results res;
  const uint64_t t = f.pool->AcquireAsync("b", res.For("b"));
  f.pool->CancelAcquire(t);
  EXPECT_EQ(res.Order(), std::vector<std::string>{"b:cancelled"});
  f.pool->CancelAcquire(t);  // twice: no second callback
  EXPECT_EQ(res.Count(), 1u);
  EXPECT_EQ(f.pool->Requests().waiting, 0);
  a.lease.reset();
  // Nobody waits for b any more: it is not loaded.
  EXPECT_TRUE(f.pool->Acquire("a", 0).ok());
  EXPECT_EQ(f.factory->Loads(), std::vector<std::string>{"a"});
}

TEST(PoolQueue, AdmissionPauseHoldsNewRequestsUntilResumed) {
  PoolFixture f;
  f.Start({"a"});
  ASSERT_TRUE(f.Touch("a").ok());
  f.pool->SetAdmissionPaused(true);
  Results res;
  f.pool->AcquireAsync("a", res.For("a"));
  EXPECT_EQ(res.Count(), 0u);
  f.pool->SetAdmissionPaused(false);
  ASSERT_TRUE(WaitFor([&] { return res.Count() == 1; }));
  EXPECT_EQ(res.Order(), std::vector<std::string>{"a:ok"});
}

TEST(PoolQueue, ShutdownFailsQueuedRequests) {
  PoolFixture f;
  SixEach(f, {"a", "b"});
  AcquireResult a = f.pool->Acquire("a");
  ASSERT_TRUE(a.ok());
  Results res;
  f.pool->AcquireAsync("b", res.For("b"));
  std::thread stop([&] { f.pool->Shutdown(); });
  ASSERT_TRUE(WaitFor([&] { return res.Count() == 1; }));
  EXPECT_EQ(res.Order(), std::vector<std::string>{"b:server_shutting_down"});
  a.lease.reset();  // the pool's shutdown waits for leases
  stop.join();
  EXPECT_TRUE(f.factory->Last("a")->stopped);
  EXPECT_EQ(f.pool->Acquire("a").error.code, PoolErrorCode::kShutdown);
}

}  // namespace
}  // namespace llmhost::pool_queue_test
