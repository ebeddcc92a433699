#include "server/pool_errors.h"

namespace llmhost::server {

int PoolErrorHttpStatus(PoolErrorCode code) {
  switch (code) {
    case PoolErrorCode::kOk: return 200;
    case PoolErrorCode::kNotFound: return 404;
    case PoolErrorCode::kTooLarge:
    case PoolErrorCode::kInsufficientMemory: return 507;
    case PoolErrorCode::kBusy:
    case PoolErrorCode::kLoading:
    case PoolErrorCode::kUnloading:
    case PoolErrorCode::kUnavailable: return 409;
    case PoolErrorCode::kTimeout:
    case PoolErrorCode::kAborted:
    case PoolErrorCode::kShutdown: return 503;
    case PoolErrorCode::kCancelled: return 499;  // nobody to answer
    case PoolErrorCode::kPrefillRejected: return 400;
    case PoolErrorCode::kInternal: return 500;
  }
  return 500;
}

ApiError PoolApiError(const PoolError& e) {
  ApiError out = ErrorWithStatus(PoolErrorHttpStatus(e.code), e.message, PoolErrorCodeName(e.code));
  out.retry_after_s = e.retry_after_s;
  if (e.code == PoolErrorCode::kNotFound) out.param = "model";
  if (e.code == PoolErrorCode::kPrefillRejected) {
    out.numbers = {{"estimated_bytes", e.estimated_bytes}, {"limit_bytes", e.limit_bytes}};
  }
  return out;
}

}  // namespace llmhost::server
