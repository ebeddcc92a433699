// ThreadTeam: every call runs each rank's part on that rank's own thread
// (never the caller's), all at once, and returns when every part is done.
#include "util/thread_team.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace llmhost::thread_team_test {
namespace {

TEST(ThreadTeam, EachRankRunsOnItsOwnThreadEveryRound) {
  ThreadTeam team(3);
  EXPECT_EQ(team.size(), 3);
  std::vector<std::thread::id> first(3);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::thread::id> ids(3);
    std::atomic<int> arrived{0};
    team.Run([&](int rank) {
      ids[static_cast<size_t>(rank)] = std::this_thread::get_id();
      // The ranks run at the same time: each waits here for the others (a collective needs that).
      arrived.fetch_add(1);
      while (arrived.load() < 3) std::this_thread::yield();
    });
    EXPECT_EQ(arrived.load(), 3);
    std::set<std::thread::id> distinct(ids.begin(), ids.end());
    EXPECT_EQ(distinct.size(), 3u);
    EXPECT_EQ(distinct.count(std::this_thread::get_id()), 0u);
    if (round == 0) first = ids;
    EXPECT_EQ(ids, first) << "a rank keeps its thread";
  }
}

TEST(ThreadTeam, APartsExceptionReachesTheCallerAfterEveryPartEnded) {
  ThreadTeam team(2);
  std::atomic<int> ended{0};
  EXPECT_THROW(team.Run([&](int rank) {
                 ended.fetch_add(1);
                 if (rank == 1) throw std::runtime_error("rank 1 failed");
               }),
               std::runtime_error);
  EXPECT_EQ(ended.load(), 2);
  std::atomic<int> again{0};
  team.Run([&](int) { again.fetch_add(1); });  // the team still works
  EXPECT_EQ(again.load(), 2);
}

}  // namespace
}  // namespace llmhost::thread_team_test
