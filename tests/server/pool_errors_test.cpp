// The pool's causes as HTTP answers (spec rule 24): status, error code,
// Retry-After and the prefill guard's figures.
#include "server/pool_errors.h"

#include <gtest/gtest.h>

namespace llmhost::server::pool_errors_test {
namespace {

TEST(PoolErrors, EachCauseHasItsStatusAndCode) {
  const struct {
    PoolErrorCode code;
    int status;
    const char* api_code;
  } kCases[] = {
      {PoolErrorCode::kNotFound, 404, "model_not_found"},
      {PoolErrorCode::kTooLarge, 507, "model_too_large"},
      {PoolErrorCode::kInsufficientMemory, 507, "insufficient_memory"},
      {PoolErrorCode::kBusy, 409, "model_busy"},
      {PoolErrorCode::kLoading, 409, "model_loading"},
      {PoolErrorCode::kUnloading, 409, "model_unloading"},
      {PoolErrorCode::kUnavailable, 409, "model_unavailable"},
      {PoolErrorCode::kTimeout, 503, "model_wait_timeout"},
      {PoolErrorCode::kAborted, 503, "model_load_aborted"},
      {PoolErrorCode::kShutdown, 503, "server_shutting_down"},
      {PoolErrorCode::kPrefillRejected, 400, "prefill_memory_exceeded"},
      {PoolErrorCode::kInternal, 500, "internal_error"},
  };
  for (const auto& c : kCases) {
    PoolError e;
    e.code = c.code;
    e.message = "why";
    const ApiError a = PoolApiError(e);
    EXPECT_EQ(a.status, c.status) << c.api_code;
    EXPECT_EQ(a.code, c.api_code);
    EXPECT_EQ(a.message, "why");
    EXPECT_EQ(a.param, c.code == PoolErrorCode::kNotFound ? "model" : "") << c.api_code;
  }
}

TEST(PoolErrors, RetryAfterAndPrefillFiguresTravel) {
  PoolError t;
  t.code = PoolErrorCode::kTimeout;
  t.retry_after_s = 7;
  EXPECT_EQ(PoolApiError(t).retry_after_s, 7);
  PoolError p;
  p.code = PoolErrorCode::kPrefillRejected;
  p.estimated_bytes = 100;
  p.limit_bytes = 50;
  const ApiError a = PoolApiError(p);
  ASSERT_EQ(a.numbers.size(), 2u);
  EXPECT_EQ(a.numbers[0], (std::pair<std::string, uint64_t>{"estimated_bytes", 100}));
  EXPECT_EQ(a.numbers[1], (std::pair<std::string, uint64_t>{"limit_bytes", 50}));
}

}  // namespace
}  // namespace llmhost::server::pool_errors_test
