#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace llmhost::server {

ApiFlavor FlavorForPath(std::string_view path) {
  if (path.substr(0, 12) == "/v1/messages") return ApiFlavor::kAnthropic;
  // Ollama's API, but for llmhost's own /api/status.
  if (path.substr(0, 5) == "/api/" && path != "/api/status") return ApiFlavor::kOllama;
  return ApiFlavor::kOpenAI;
}

std::string ErrorType(int status, ApiFlavor flavor) {
  if (flavor == ApiFlavor::kAnthropic) {
    switch (status) {
      case 401: return "authentication_error";
      case 403: return "permission_error";
      case 404: return "not_found_error";
      case 413: return "request_too_large";
      case 429: return "rate_limit_error";
      case 503:
      case 529: return "overloaded_error";
      default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
  }
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string ErrorJson(const ApiError& e, ApiFlavor flavor) {
  nlohmann::ordered_json j;  // keys in the documented order
  if (flavor == ApiFlavor::kOllama) {
    // Ollama's clients show the error as the string it is.
    return nlohmann::ordered_json{{"error", e.message}}.dump(-1, ' ', false,
                                                            nlohmann::ordered_json::error_handler_t::replace);
  }
  if (flavor == ApiFlavor::kAnthropic) {
    j = {{"type", "error"}, {"error", {{"type", ErrorType(e.status, flavor)}, {"message", e.message}}}};
  } else {
    j["error"] = {{"message", e.message},
                  {"type", ErrorType(e.status, flavor)},
                  {"param", e.param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.param)},
                  {"code", e.code.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.code)}};
  }
  for (const auto& [key, value] : e.numbers) j["error"][key] = value;
  // Messages may quote client text: never fail on invalid UTF-8.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

HttpResponse ErrorResponse(const ApiError& e, ApiFlavor flavor) {
  HttpResponse r;
  r.status = e.status;
  r.body = ErrorJson(e, flavor);
  if (e.retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  return r;
}

}  // namespace llmhost::server
