// Minimal leveled logging to stderr. LLMHOST_LOG_LEVEL=debug|info|warn|error.
//
// Two formats (SetLogFormat): text, one line "TS L message" (the default),
// or JSON, one object per line (util/log_json.h) for log collectors. A line
// written while a ScopedRequestId is alive on the thread carries that id in
// the JSON format; fields (LOG_INFO_FIELDS) appear in the JSON format only,
// the text line being the message alone.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "util/status.h"

namespace llmhost {

enum class LogLevel { kDebug = 0, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };

// One structured value of a log line: a string, an integer or a number.
struct LogField {
  LogField(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  LogField(std::string k, const char* v) : key(std::move(k)), value(std::string(v)) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  LogField(std::string k, T v) : key(std::move(k)), value(static_cast<int64_t>(v)) {}
  LogField(std::string k, double v) : key(std::move(k)), value(v) {}

  std::string key;
  std::variant<std::string, int64_t, double> value;
};
using LogFields = std::vector<LogField>;

LogLevel CurrentLogLevel();
void SetLogLevel(LogLevel level);
LogFormat CurrentLogFormat();
void SetLogFormat(LogFormat format);
// "text" or "json"; InvalidArgument otherwise.
Result<LogFormat> ParseLogFormat(const std::string& name);
void LogLine(LogLevel level, const std::string& message, const LogFields& fields = {});

// The request id of the work this thread does now ("" when none).
const std::string& CurrentRequestId();

// Sets the thread's request id for its lifetime, then restores the previous one.
class ScopedRequestId {
 public:
  explicit ScopedRequestId(std::string id);
  ~ScopedRequestId();
  ScopedRequestId(const ScopedRequestId&) = delete;
  ScopedRequestId& operator=(const ScopedRequestId&) = delete;

 private:
  std::string previous_;
};

}  // namespace llmhost

#define LLMHOST_LOG_FIELDS(level, fields, expr)                         \
  do {                                                                  \
    if (::llmhost::LogLevel::level >= ::llmhost::CurrentLogLevel()) {   \
      std::ostringstream _os;                                           \
      _os << expr;                                                      \
      ::llmhost::LogLine(::llmhost::LogLevel::level, _os.str(), fields); \
    }                                                                   \
  } while (0)
#define LLMHOST_LOG(level, expr) LLMHOST_LOG_FIELDS(level, ::llmhost::LogFields{}, expr)
#define LOG_DEBUG(expr) LLMHOST_LOG(kDebug, expr)
#define LOG_INFO(expr) LLMHOST_LOG(kInfo, expr)
#define LOG_WARN(expr) LLMHOST_LOG(kWarn, expr)
#define LOG_ERROR(expr) LLMHOST_LOG(kError, expr)
// The same with structured fields, given as a variable (braces do not group
// macro arguments): LogFields f{{"tokens", n}}; LOG_INFO_FIELDS(f, "done " << n);
#define LOG_INFO_FIELDS(fields, expr) LLMHOST_LOG_FIELDS(kInfo, fields, expr)
#define LOG_WARN_FIELDS(fields, expr) LLMHOST_LOG_FIELDS(kWarn, fields, expr)
