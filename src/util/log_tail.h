// The most recent log lines, kept in memory for the dashboard's live tail
// (GET /admin/api/logs). The logger appends every line it writes; readers
// each keep a cursor (the last sequence number they saw) and ask for what
// came after it, so the logger never waits on a reader and memory is the
// ring's alone. A reader that falls more than the ring behind learns how
// many lines it missed.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "util/log.h"

namespace llmhost {

struct LogRecord {
  uint64_t seq = 0;  // 1, 2, ... in the order written
  LogLevel level = LogLevel::kInfo;
  std::string line;  // as written to stderr (text or JSON)
};

class LogTail {
 public:
  // Keeps the last `capacity` lines, each cut to `max_line_bytes`.
  explicit LogTail(size_t capacity, size_t max_line_bytes = 8192);

  void Append(LogLevel level, const std::string& line);

  struct Page {
    std::vector<LogRecord> records;  // at `min_level` or above, oldest first
    uint64_t next = 0;               // the cursor to ask with next time
    uint64_t missed = 0;             // lines after the cursor that the ring no longer holds
  };
  // At most `max` records written after sequence number `after` (0: from
  // the first line ever written).
  Page Since(uint64_t after, LogLevel min_level, size_t max) const;
  uint64_t last_seq() const;
  size_t size() const;  // lines kept

 private:
  const size_t capacity_;
  const size_t max_line_bytes_;
  mutable std::mutex mu_;
  std::deque<LogRecord> ring_;  // guarded by mu_
  uint64_t last_seq_ = 0;       // guarded by mu_
};

// The tail the logger (util/log.h) feeds: the last 2000 lines.
LogTail& ProcessLogTail();

}  // namespace llmhost
