// The pool's causes (pool/pool_types.h) as HTTP answers: the one place where
// a refusal of the engine pool becomes a status code and an error code.
//
//   not found 404 · too large / insufficient memory 507 · busy / loading /
//   unloading / a cached load failure 409 · wait timeout / load aborted /
//   shutting down 503 (Retry-After when the pool gave one) · prefill guard
//   400 (with estimated_bytes and limit_bytes) · internal 500
#pragma once

#include "pool/pool_types.h"
#include "server/api_error.h"

namespace llmhost::server {

int PoolErrorHttpStatus(PoolErrorCode code);
// Status, message, the cause's name as the error code ("model_too_large"),
// Retry-After, and the prefill guard's figures.
ApiError PoolApiError(const PoolError& e);

}  // namespace llmhost::server
