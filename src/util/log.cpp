#include "util/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "util/log_json.h"
#include "util/log_tail.h"

namespace llmhost {

namespace {
LogLevel LevelFromEnv() {
  const char* v = std::getenv("LLMHOST_LOG_LEVEL");
  if (v == nullptr) return LogLevel::kInfo;
  if (std::strcmp(v, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(v, "warn") == 0) return LogLevel::kWarn;
  if (std::strcmp(v, "error") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}
std::atomic<int> g_level{static_cast<int>(LevelFromEnv())};
std::atomic<int> g_format{static_cast<int>(LogFormat::kText)};
std::mutex g_mu;
thread_local std::string t_request_id;

std::string TextLine(LogLevel level, const std::string& message) {
  static const char* kNames[] = {"D", "I", "W", "E"};
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char ts[32];
  std::strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(ts) + " " + kNames[static_cast<int>(level)] + " " + message;
}
}  // namespace

LogLevel CurrentLogLevel() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }
void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogFormat CurrentLogFormat() { return static_cast<LogFormat>(g_format.load(std::memory_order_relaxed)); }
void SetLogFormat(LogFormat format) { g_format.store(static_cast<int>(format)); }

Result<LogFormat> ParseLogFormat(const std::string& name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return Status::InvalidArgument("'" + name + "' (expected text or json)");
}

void LogLine(LogLevel level, const std::string& message, const LogFields& fields) {
  const std::string line =
      CurrentLogFormat() == LogFormat::kJson
          ? FormatJsonLogLine(level, std::chrono::system_clock::now(), message, t_request_id, fields)
          : TextLine(level, message);
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "%s\n", line.c_str());
  ProcessLogTail().Append(level, line);  // under g_mu: the tail keeps stderr's order
}

const std::string& CurrentRequestId() { return t_request_id; }

ScopedRequestId::ScopedRequestId(std::string id) : previous_(std::move(t_request_id)) {
  t_request_id = std::move(id);
}
ScopedRequestId::~ScopedRequestId() { t_request_id = std::move(previous_); }

}  // namespace llmhost
