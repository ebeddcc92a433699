// The dashboard's live log tail: GET /admin/api/logs[?level=debug|info|warn|error]
// answers an SSE stream of the server's log lines at that level or above,
// starting with the most recent ones kept:
//   event: log      data: {"seq", "level", "line"}
//   event: missed   data: {"lines"}   the stream fell behind the ring (util/log_tail.h)
// Each stream has a cursor into ProcessLogTail(); the server's ticker calls
// Pump() every second, so the logger itself never waits for a client. A
// client that does not read (more than kMaxPendingBytes queued) is dropped;
// at most kMaxStreams run at once (429 beyond).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/http_types.h"
#include "util/log.h"
#include "util/log_tail.h"

namespace llmhost::server {

class LogStreams {
 public:
  static constexpr size_t kMaxStreams = 16;
  static constexpr size_t kMaxPendingBytes = 1 << 20;
  static constexpr size_t kBacklogLines = 200;  // sent when a stream starts
  static constexpr size_t kMaxLinesPerPump = 500;

  explicit LogStreams(const LogTail* tail = &ProcessLogTail()) : tail_(tail) {}

  // Answers `request` with a stream, or an error (400 bad level, 429, 503 stopping).
  void Start(const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
  // Sends every stream what was logged since its last pump; forgets closed ones.
  void Pump();
  // Ends every stream and refuses new ones (the server is stopping).
  void EndAll();
  size_t size() const;

 private:
  struct Stream {
    std::shared_ptr<ResponseWriter> writer;
    LogLevel min_level;
    uint64_t cursor;
  };
  // Writes what came after the stream's cursor; false when it must be dropped.
  bool Send(Stream& s) const;

  const LogTail* tail_;
  mutable std::mutex mu_;
  std::vector<Stream> streams_;  // guarded by mu_
  bool closed_ = false;          // guarded by mu_
};

// "level=warn" in a query string → kWarn; none → kDebug (every line kept);
// InvalidArgument for another value.
Result<LogLevel> LogLevelFromQuery(const std::string& query);

}  // namespace llmhost::server
