#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include <atomic>
#include <vector>

namespace llmhost::thread_pool_test {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  ThreadPool pool(4);
  for (int64_t n : {1, 7, 64, 1000, 12345}) {
    std::vector<std::atomic<int>> hits(n);
    pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPoolTest, RespectsGrainAndRepeatsManyTimes) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int rep = 0; rep < 200; ++rep) {
    pool.ParallelFor(100, 30, [&](int64_t b, int64_t e) {
      EXPECT_TRUE(e - b >= 30 || e == 100);
      int64_t local = 0;
      for (int64_t i = b; i < e; ++i) local += i;
      sum += local;
    });
  }
  EXPECT_EQ(sum.load(), 200 * 4950);
}

TEST(ThreadPoolTest, SingleThreadPoolRunsInline) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.size(), 1);
  int64_t total = 0;  // no atomics needed: runs on this thread
  pool.ParallelFor(10, 1, [&](int64_t b, int64_t e) { total += e - b; });
  EXPECT_EQ(total, 10);
}

// More threads than cores and back-to-back calls of different sizes: a
// worker that wakes late for a finished call must find no work in it and
// never run a chunk of a call twice or of a call that has ended.
TEST(ThreadPoolTest, LateWorkersNeverRunAnEndedCall) {
  const int threads = 2 * static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  for (int rep = 0; rep < 2000; ++rep) {
    const int64_t n = 1 + (rep * 37) % 700;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<bool> ended{false};
    std::atomic<int> after_end{0};
    pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
      if (ended.load()) after_end.fetch_add(1);
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    ended.store(true);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "rep " << rep << " index " << i;
    ASSERT_EQ(after_end.load(), 0);
  }
}

}  // namespace
}  // namespace llmhost::thread_pool_test
