// The JSON log line: every message, however odd its bytes, stays one line
// that a JSON parser reads back to the same text (invalid UTF-8 as U+FFFD).
#include "util/log_json.h"

#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

namespace llmhost::log_json_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::system_clock;

// 2021-03-04T05:06:07.089Z
const system_clock::time_point kT = system_clock::time_point(seconds(1614834367) + milliseconds(89));

nlohmann::json Parse(const std::string& line) {
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  return nlohmann::json::parse(line);  // throws (and fails the test) on bad JSON
}

TEST(LogJsonTest, TimestampIsRfc3339UtcWithMilliseconds) {
  EXPECT_EQ(FormatLogTimestamp(kT), "2021-03-04T05:06:07.089Z");
  EXPECT_EQ(FormatLogTimestamp(system_clock::time_point(seconds(0))), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatLogTimestamp(system_clock::time_point(milliseconds(-1))), "1969-12-31T23:59:59.999Z");
}

TEST(LogJsonTest, LineHasTsLevelMsgInOrder) {
  EXPECT_EQ(FormatJsonLogLine(LogLevel::kInfo, kT, "serve: stopped", "", {}),
            R"({"ts":"2021-03-04T05:06:07.089Z","level":"info","msg":"serve: stopped"})");
}

TEST(LogJsonTest, LevelNamesMatchTheEnvironmentVariable) {
  EXPECT_STREQ(LogLevelName(LogLevel::kDebug), "debug");
  EXPECT_STREQ(LogLevelName(LogLevel::kInfo), "info");
  EXPECT_STREQ(LogLevelName(LogLevel::kWarn), "warn");
  EXPECT_STREQ(LogLevelName(LogLevel::kError), "error");
  EXPECT_EQ(Parse(FormatJsonLogLine(LogLevel::kError, kT, "x", "", {}))["level"], "error");
}

TEST(LogJsonTest, RequestIdOnlyWhenSet) {
  EXPECT_FALSE(Parse(FormatJsonLogLine(LogLevel::kInfo, kT, "m", "", {})).contains("request_id"));
  EXPECT_EQ(Parse(FormatJsonLogLine(LogLevel::kInfo, kT, "m", "abc-1", {}))["request_id"], "abc-1");
}

TEST(LogJsonTest, EscapesQuotesBackslashesAndControlCharacters) {
  const std::string msg = std::string("say \"hi\"\\ \n\r\t\b\f") + '\x01' + '\x1f' + '\x7f' + std::string(1, '\0') + "end";
  const std::string line = FormatJsonLogLine(LogLevel::kWarn, kT, msg, "", {});
  EXPECT_NE(line.find(R"(say \"hi\"\\ \n\r\t\b\f\u0001\u001f\u007f\u0000end)"), std::string::npos) << line;
  EXPECT_EQ(Parse(line)["msg"], msg);
}

TEST(LogJsonTest, InvalidUtf8BecomesReplacementCharacter) {
  // A lone continuation byte, a truncated 2-byte sequence, an overlong '/', a surrogate.
  const std::string msg = "a\x80" "b\xC3" "c\xC0\xAF" "d\xED\xA0\x80" "e";
  const nlohmann::json j = Parse(FormatJsonLogLine(LogLevel::kInfo, kT, msg, "", {}));
  EXPECT_EQ(j["msg"], "a\uFFFD" "b\uFFFD" "c\uFFFD\uFFFD" "d\uFFFD\uFFFD\uFFFD" "e");
}

TEST(LogJsonTest, ValidUtf8IsKeptAsIs) {
  const std::string msg = "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80 \xEF\xBF\xBD";  // é, 中, 😀, U+FFFD itself
  const std::string line = FormatJsonLogLine(LogLevel::kInfo, kT, msg, "", {});
  EXPECT_NE(line.find(msg), std::string::npos);
  EXPECT_EQ(Parse(line)["msg"], msg);
}

TEST(LogJsonTest, FieldsFollowWithTheirTypes) {
  const LogFields fields{{"path", "/v1/chat/completions"}, {"tokens", size_t{42}}, {"negative", -3},
                         {"ratio", 0.25}, {"nan", std::nan("")}, {"quote\"key", "v\n"}};
  const std::string line = FormatJsonLogLine(LogLevel::kInfo, kT, "done", "r1", fields);
  EXPECT_NE(line.find(R"("request_id":"r1","path":"/v1/chat/completions","tokens":42,"negative":-3,)"
                      R"("ratio":0.25,"nan":null,"quote\"key":"v\n"})"),
            std::string::npos)
      << line;
  const nlohmann::json j = Parse(line);
  EXPECT_EQ(j["tokens"], 42);
  EXPECT_EQ(j["quote\"key"], "v\n");
}

TEST(LogJsonTest, FieldsCannotOverrideTheFixedKeys) {
  const LogFields fields{{"msg", "forged"}, {"level", "error"}, {"ts", 1}, {"request_id", "other"}, {"ok", 1}};
  const std::string line = FormatJsonLogLine(LogLevel::kInfo, kT, "real", "r1", fields);
  EXPECT_EQ(line, R"({"ts":"2021-03-04T05:06:07.089Z","level":"info","msg":"real","request_id":"r1","ok":1})");
}

TEST(LogJsonTest, ParsesFormatNames) {
  EXPECT_EQ(*ParseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  const auto bad = ParseLogFormat("JSON");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected text or json"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::log_json_test
