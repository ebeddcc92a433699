// LogLine as stderr sees it: the text format unchanged, the JSON format with
// the thread's request id and the fields; the level filter in both.
#include "util/log.h"

#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

namespace llmhost::log_test {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override { SetLogLevel(LogLevel::kInfo); }  // whatever LLMHOST_LOG_LEVEL says
  void TearDown() override {
    SetLogFormat(LogFormat::kText);
    SetLogLevel(LogLevel::kInfo);
  }
};

TEST_F(LogTest, TextLineIsTimestampLetterMessage) {
  SetLogFormat(LogFormat::kText);
  ScopedRequestId id("r-1");  // not part of the text format
  LogFields f{{"tokens", 3}};
  testing::internal::CaptureStderr();
  LOG_WARN_FIELDS(f, "http: a \"quoted\" message " << 3);
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(std::regex_match(out, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ W http: a "quoted" message 3\n)")))
      << out;
}

TEST_F(LogTest, JsonLineCarriesRequestIdAndFields) {
  SetLogFormat(LogFormat::kJson);
  LogFields f{{"path", "/v1/completions"}, {"completion_tokens", 7}};
  testing::internal::CaptureStderr();
  {
    ScopedRequestId id("r-2");
    LOG_INFO_FIELDS(f, "http: done");
  }
  LOG_ERROR("outside");
  const std::string out = testing::internal::GetCapturedStderr();
  const size_t nl = out.find('\n');
  ASSERT_NE(nl, std::string::npos);
  const auto first = nlohmann::json::parse(out.substr(0, nl));
  EXPECT_EQ(first["level"], "info");
  EXPECT_EQ(first["msg"], "http: done");
  EXPECT_EQ(first["request_id"], "r-2");
  EXPECT_EQ(first["path"], "/v1/completions");
  EXPECT_EQ(first["completion_tokens"], 7);
  const auto second = nlohmann::json::parse(out.substr(nl + 1));
  EXPECT_EQ(second["msg"], "outside");
  EXPECT_FALSE(second.contains("request_id"));
}

TEST_F(LogTest, LevelFilterAppliesToBothFormats) {
  SetLogLevel(LogLevel::kWarn);
  for (LogFormat format : {LogFormat::kText, LogFormat::kJson}) {
    SetLogFormat(format);
    testing::internal::CaptureStderr();
    LOG_INFO("hidden");
    LOG_DEBUG("hidden");
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  }
}

TEST_F(LogTest, ScopedRequestIdNestsRestoresAndStaysOnItsThread) {
  EXPECT_EQ(CurrentRequestId(), "");
  {
    ScopedRequestId outer("a");
    {
      ScopedRequestId inner("b");
      EXPECT_EQ(CurrentRequestId(), "b");
    }
    EXPECT_EQ(CurrentRequestId(), "a");
    std::string other_thread = "unset";
    std::thread([&] { other_thread = CurrentRequestId(); }).join();
    EXPECT_EQ(other_thread, "");
  }
  EXPECT_EQ(CurrentRequestId(), "");
}

}  // namespace
}  // namespace llmhost::log_test
