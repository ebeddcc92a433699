// API errors and their two wire shapes:
//   OpenAI routes:    {"error":{"message","type","param","code"}}
//   Anthropic routes: {"type":"error","error":{"type","message"}}
// The type follows the status (400 invalid_request_error, 401
// authentication_error, 404 not_found_error, 429 rate_limit_error, 5xx
// server_error / api_error / overloaded_error).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http_types.h"

namespace llmhost::server {

enum class ApiFlavor { kOpenAI, kAnthropic, kOllama };  // kOllama: {"error": "message"}

struct ApiError {
  int status = 400;
  std::string message;
  std::string param;  // the request field at fault ("" → null)
  std::string code;   // a machine-readable code ("" → null)
  int retry_after_s = 0;  // > 0: a Retry-After header
  // Extra numeric fields of the error object ("estimated_bytes", "limit_bytes").
  std::vector<std::pair<std::string, uint64_t>> numbers;
};

// Anthropic routes (/v1/messages...) answer in Anthropic's shape; all others in OpenAI's.
ApiFlavor FlavorForPath(std::string_view path);

inline ApiError BadRequest(std::string message, std::string param = "") {
  return ApiError{400, std::move(message), std::move(param), "", 0, {}};
}
inline ApiError ErrorWithStatus(int status, std::string message, std::string code = "") {
  return ApiError{status, std::move(message), "", std::move(code), 0, {}};
}

std::string ErrorType(int status, ApiFlavor flavor);
std::string ErrorJson(const ApiError& e, ApiFlavor flavor);  // the body
HttpResponse ErrorResponse(const ApiError& e, ApiFlavor flavor);

using MaybeError = std::optional<ApiError>;

}  // namespace llmhost::server
