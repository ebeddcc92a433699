// The JSON log format: one object per line,
//   {"ts":"2026-01-02T03:04:05.678Z","level":"info","msg":"...","request_id":"...",<fields>}
// request_id only when there is one. Strings are escaped so that any message
// stays one valid line: quotes, backslashes and control characters escaped,
// invalid UTF-8 replaced by U+FFFD. Fields named ts, level, msg or request_id
// are left out (they would duplicate a key).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "util/log.h"

namespace llmhost {

// "debug", "info", "warn", "error": the names LLMHOST_LOG_LEVEL takes.
const char* LogLevelName(LogLevel level);
// RFC 3339 in UTC with milliseconds: "2026-01-02T03:04:05.678Z".
std::string FormatLogTimestamp(std::chrono::system_clock::time_point t);
// Appends s as a JSON string literal (quotes included).
void AppendJsonString(std::string* out, std::string_view s);
// One line without its newline.
std::string FormatJsonLogLine(LogLevel level, std::chrono::system_clock::time_point t, std::string_view message,
                              std::string_view request_id, const LogFields& fields);

}  // namespace llmhost
