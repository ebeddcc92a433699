#include "util/log_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "util/utf8.h"

namespace llmhost {

namespace {

bool IsReservedKey(std::string_view key) {
  return key == "ts" || key == "level" || key == "msg" || key == "request_id";
}

void AppendValue(std::string* out, const std::variant<std::string, int64_t, double>& value) {
  if (const auto* s = std::get_if<std::string>(&value)) {
    AppendJsonString(out, *s);
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    *out += std::to_string(*i);
  } else {
    const double d = std::get<double>(value);
    if (!std::isfinite(d)) {
      *out += "null";  // JSON has no NaN or infinity
      return;
    }
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof(buf), d);
    out->append(buf, r.ptr);
  }
}

}  // namespace

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

std::string FormatLogTimestamp(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  // Floor division: instants before 1970 keep a millisecond part in [0, 999].
  const int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>(ms - secs * 1000));
  return buf;
}

void AppendJsonString(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  *out += '"';
  size_t pos = 0;
  while (pos < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[pos]);
    if (c >= 0x80) {
      const size_t start = pos;
      utf8::DecodeOne(s, &pos);
      // A well-formed character is 2-4 bytes; a bad byte is skipped alone.
      if (pos - start == 1) {
        utf8::Append(out, utf8::kReplacement);
      } else {
        out->append(s.substr(start, pos - start));
      }
      continue;
    }
    ++pos;
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          *out += "\\u00";
          *out += kHex[c >> 4];
          *out += kHex[c & 0xf];
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

std::string FormatJsonLogLine(LogLevel level, std::chrono::system_clock::time_point t, std::string_view message,
                              std::string_view request_id, const LogFields& fields) {
  std::string out = "{\"ts\":\"" + FormatLogTimestamp(t) + "\",\"level\":\"" + LogLevelName(level) + "\",\"msg\":";
  AppendJsonString(&out, message);
  if (!request_id.empty()) {
    out += ",\"request_id\":";
    AppendJsonString(&out, request_id);
  }
  for (const LogField& f : fields) {
    if (IsReservedKey(f.key)) continue;
    out += ',';
    AppendJsonString(&out, f.key);
    out += ':';
    AppendValue(&out, f.value);
  }
  out += '}';
  return out;
}

}  // namespace llmhost
