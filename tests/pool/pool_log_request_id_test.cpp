// The pool manager's log lines about an admission (and the load it starts)
// carry the request id of the request that waited for it, in the JSON log
// format, though the manager thread is not the request's.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "fake_engine.h"
#include "pool/engine_pool.h"
#include "util/log.h"
#include "util/log_tail.h"

namespace llmhost::pool_log_request_id_test {
namespace {

using testing::kGB;
using testing::PoolFixture;

// The JSON lines written after `after` whose message starts with `prefix`.
std::vector<nlohmann::json> LinesSince(uint64_t after, const std::string& prefix) {
  std::vector<nlohmann::json> out;
  for (const LogRecord& r : ProcessLogTail().Since(after, LogLevel::kDebug, 10000).records) {
    nlohmann::json j = nlohmann::json::parse(r.line, nullptr, false);
    if (j.is_object() && j.value("msg", "").rfind(prefix, 0) == 0) out.push_back(std::move(j));
  }
  return out;
}

class PoolLogRequestId : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogFormat(LogFormat::kJson);
    SetLogLevel(LogLevel::kInfo);
  }
  void TearDown() override { SetLogFormat(LogFormat::kText); }
};

TEST_F(PoolLogRequestId, AdmissionLinesCarryTheWaitingRequestsId) {
  PoolFixture f;
  testing::FakeModelSpec spec;
  spec.resident = 2 * kGB;
  f.factory->Set("a", spec);
  f.factory->Set("b", spec);
  f.Start({"a", "b"});
  const uint64_t before = ProcessLogTail().last_seq();
  {
    ScopedRequestId id("req-for-a");
    ASSERT_TRUE(f.Touch("a").ok());
  }
  ASSERT_TRUE(f.Touch("b").ok());  // no request id on this thread now
  const std::vector<nlohmann::json> a = LinesSince(before, "pool: admission model=a ");
  const std::vector<nlohmann::json> b = LinesSince(before, "pool: admission model=b ");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].value("request_id", ""), "req-for-a") << a[0].dump();
  EXPECT_FALSE(b[0].contains("request_id")) << b[0].dump();  // the id does not leak to the next admission
}

}  // namespace
}  // namespace llmhost::pool_log_request_id_test
