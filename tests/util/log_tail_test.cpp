#include "util/log_tail.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace llmhost::log_tail_test {
namespace {

std::vector<std::string> Lines(const LogTail::Page& p) {
  std::vector<std::string> out;
  for (const LogRecord& r : p.records) out.push_back(r.line);
  return out;
}

TEST(LogTailTest, ReadsFromTheCursorOn) {
  LogTail t(10);
  t.Append(LogLevel::kInfo, "a");
  t.Append(LogLevel::kWarn, "b");
  LogTail::Page p = t.Since(0, LogLevel::kDebug, 100);
  EXPECT_EQ(Lines(p), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.next, 2u);
  EXPECT_EQ(p.missed, 0u);
  t.Append(LogLevel::kError, "c");
  p = t.Since(p.next, LogLevel::kDebug, 100);
  EXPECT_EQ(Lines(p), (std::vector<std::string>{"c"}));
  EXPECT_EQ(p.records[0].seq, 3u);
  EXPECT_EQ(p.records[0].level, LogLevel::kError);
  p = t.Since(p.next, LogLevel::kDebug, 100);
  EXPECT_TRUE(p.records.empty());
  EXPECT_EQ(p.next, 3u);
}

TEST(LogTailTest, LevelFilterStillAdvancesTheCursor) {
  LogTail t(10);
  t.Append(LogLevel::kDebug, "d");
  t.Append(LogLevel::kInfo, "i");
  t.Append(LogLevel::kWarn, "w");
  t.Append(LogLevel::kDebug, "d2");
  LogTail::Page p = t.Since(0, LogLevel::kWarn, 100);
  EXPECT_EQ(Lines(p), (std::vector<std::string>{"w"}));
  EXPECT_EQ(p.next, 4u);  // the debug line after it was read, and skipped
}

TEST(LogTailTest, KeepsOnlyCapacityAndCountsWhatAReaderMissed) {
  LogTail t(3);
  for (int i = 1; i <= 8; ++i) t.Append(LogLevel::kInfo, std::to_string(i));
  EXPECT_EQ(t.last_seq(), 8u);
  EXPECT_EQ(t.size(), 3u);
  LogTail::Page first = t.Since(0, LogLevel::kDebug, 100);
  EXPECT_EQ(Lines(first), (std::vector<std::string>{"6", "7", "8"}));
  EXPECT_EQ(first.missed, 5u);
  EXPECT_EQ(t.Since(5, LogLevel::kDebug, 100).missed, 0u);  // a reader that starts at the oldest kept
  LogTail::Page behind = t.Since(2, LogLevel::kDebug, 100);
  EXPECT_EQ(behind.missed, 3u);  // 3, 4 and 5 are gone
  EXPECT_EQ(Lines(behind), (std::vector<std::string>{"6", "7", "8"}));
}

TEST(LogTailTest, MaxBoundsAPage) {
  LogTail t(10);
  for (int i = 1; i <= 5; ++i) t.Append(LogLevel::kInfo, std::to_string(i));
  LogTail::Page p = t.Since(0, LogLevel::kDebug, 2);
  EXPECT_EQ(Lines(p), (std::vector<std::string>{"1", "2"}));
  p = t.Since(p.next, LogLevel::kDebug, 2);
  EXPECT_EQ(Lines(p), (std::vector<std::string>{"3", "4"}));
}

TEST(LogTailTest, LongLinesAreCutOnACharacterBoundary) {
  LogTail t(2, 5);
  t.Append(LogLevel::kInfo, "abcd\xC3\xA9xyz");  // the cut falls inside é
  EXPECT_EQ(t.Since(0, LogLevel::kDebug, 1).records[0].line, "abcd...");
  t.Append(LogLevel::kInfo, "short");
  EXPECT_EQ(t.Since(1, LogLevel::kDebug, 1).records[0].line, "short");
}

TEST(LogTailTest, TheLoggerFeedsTheProcessTail) {
  const uint64_t before = ProcessLogTail().last_seq();
  const LogLevel saved = CurrentLogLevel();
  SetLogLevel(LogLevel::kInfo);
  LOG_WARN("log tail test line " << 42);
  LOG_DEBUG("below the level: neither written nor kept");
  SetLogLevel(saved);
  LogTail::Page p = ProcessLogTail().Since(before, LogLevel::kDebug, 10);
  ASSERT_EQ(p.records.size(), 1u);
  EXPECT_EQ(p.records[0].level, LogLevel::kWarn);
  EXPECT_NE(p.records[0].line.find("log tail test line 42"), std::string::npos);
}

TEST(LogTailTest, WritersAndReadersAtOnceLoseNothingWithinTheRing) {
  LogTail t(100000);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t cursor = 0, seen = 0;
    while (!done.load() || cursor < t.last_seq()) {
      LogTail::Page p = t.Since(cursor, LogLevel::kDebug, 64);
      for (const LogRecord& r : p.records) EXPECT_EQ(r.seq, ++seen);
      cursor = p.next;
    }
    EXPECT_EQ(seen, 4000u);
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) t.Append(LogLevel::kInfo, "x");
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
}

}  // namespace
}  // namespace llmhost::log_tail_test
