// Minimal leveled logging to stderr. LLMHOST_LOG_LEVEL=debug|info|warn|error.
#pragma once

#include <sstream>
#include <string>

namespace llmhost {

enum class LogLevel { kDebug = 0, kInfo, kWarn, kError };

LogLevel CurrentLogLevel();
void SetLogLevel(LogLevel level);
void LogLine(LogLevel level, const std::string& message);

}  // namespace llmhost

#define LLMHOST_LOG(level, expr)                                        \
  do {                                                                  \
    if (::llmhost::LogLevel::level >= ::llmhost::CurrentLogLevel()) {   \
      std::ostringstream _os;                                           \
      _os << expr;                                                      \
      ::llmhost::LogLine(::llmhost::LogLevel::level, _os.str());        \
    }                                                                   \
  } while (0)
#define LOG_DEBUG(expr) LLMHOST_LOG(kDebug, expr)
#define LOG_INFO(expr) LLMHOST_LOG(kInfo, expr)
#define LOG_WARN(expr) LLMHOST_LOG(kWarn, expr)
#define LOG_ERROR(expr) LLMHOST_LOG(kError, expr)
