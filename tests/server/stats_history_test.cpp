#include "server/stats_history.h"

#include <gtest/gtest.h>

namespace llmhost::server::stats_history_test {
namespace {

StatsReading At(double t, int64_t prompt, int64_t generated, int64_t firsts = 0, double ttft_sum = 0) {
  StatsReading r;
  r.steady_s = t;
  r.unix_ms = static_cast<int64_t>(t * 1000) + 1'700'000'000'000;
  r.prompt_tokens = prompt;
  r.generated_tokens = generated;
  r.ttft_count = firsts;
  r.ttft_sum_s = ttft_sum;
  r.budgets.push_back({"Host", static_cast<uint64_t>(t) * 100, 50, 1000});
  return r;
}

TEST(StatsHistoryTest, FirstReadingIsOnlyTheBaseline) {
  StatsHistory h(5);
  EXPECT_TRUE(h.Due(0));
  h.Record(At(0, 100, 100));
  EXPECT_TRUE(h.Samples().empty());
}

TEST(StatsHistoryTest, RatesAreDeltasOverElapsedTime) {
  StatsHistory h(5);
  h.Record(At(10, 1000, 40));
  h.Record(At(15, 1500, 90, 2, 0.5));
  const std::vector<StatsSample> s = h.Samples();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].prompt_tps, 100.0);   // 500 tokens in 5 s
  EXPECT_DOUBLE_EQ(s[0].generated_tps, 10.0);  // 50 in 5 s
  ASSERT_TRUE(s[0].ttft_mean_s.has_value());
  EXPECT_DOUBLE_EQ(*s[0].ttft_mean_s, 0.25);
  EXPECT_EQ(s[0].unix_ms, 1'700'000'015'000);
  ASSERT_EQ(s[0].budgets.size(), 1u);
  EXPECT_EQ(s[0].budgets[0].usage_bytes, 1500u);
}

TEST(StatsHistoryTest, TtftIsTheMeanOfTheIntervalOnly) {
  StatsHistory h(1);
  h.Record(At(0, 0, 0));
  h.Record(At(1, 0, 0, 4, 4.0));  // four first tokens, 1 s each
  h.Record(At(2, 0, 0, 4, 4.0));  // none
  h.Record(At(3, 0, 0, 5, 4.1));  // one, 0.1 s
  const std::vector<StatsSample> s = h.Samples();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(*s[0].ttft_mean_s, 1.0);
  EXPECT_FALSE(s[1].ttft_mean_s.has_value());
  EXPECT_NEAR(*s[2].ttft_mean_s, 0.1, 1e-9);
}

TEST(StatsHistoryTest, DueAfterTheInterval) {
  StatsHistory h(5);
  h.Record(At(100, 0, 0));
  EXPECT_FALSE(h.Due(101));
  EXPECT_FALSE(h.Due(104.5));
  EXPECT_TRUE(h.Due(104.98));  // a ticker waking a hair early still samples
  EXPECT_TRUE(h.Due(106));
}

TEST(StatsHistoryTest, KeepsOneWindowOldestDropped) {
  StatsHistory h(10, 60);  // six samples
  for (int i = 0; i <= 9; ++i) h.Record(At(i * 10.0, i * 10, 0));
  const std::vector<StatsSample> s = h.Samples();
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s.front().unix_ms, 1'700'000'040'000);
  EXPECT_EQ(s.back().unix_ms, 1'700'000'090'000);
  EXPECT_DOUBLE_EQ(s.back().prompt_tps, 1.0);
}

TEST(StatsHistoryTest, AnHourAtFiveSecondsIs720Samples) {
  StatsHistory h(5);
  for (int i = 0; i <= 1000; ++i) h.Record(At(i * 5.0, 0, 0));
  EXPECT_EQ(h.Samples().size(), 720u);
}

TEST(StatsHistoryTest, ReadingsWithoutTimePassingAddNothing) {
  StatsHistory h(1);
  h.Record(At(5, 0, 0));
  h.Record(At(5, 10, 10));  // no time passed: no division by zero, no sample
  EXPECT_TRUE(h.Samples().empty());
  h.Record(At(6, 20, 10));
  ASSERT_EQ(h.Samples().size(), 1u);
  EXPECT_DOUBLE_EQ(h.Samples()[0].prompt_tps, 10.0);
}

}  // namespace
}  // namespace llmhost::server::stats_history_test
