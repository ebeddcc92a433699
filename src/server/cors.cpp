#include "server/cors.h"

#include <algorithm>

#include "server/api_error.h"

namespace llmhost::server {

namespace {

// Origins compare without a trailing slash ("http://a:3000/" = "http://a:3000").
std::string Normalize(std::string origin) {
  while (!origin.empty() && (origin.back() == '/' || origin.back() == ' ')) origin.pop_back();
  while (!origin.empty() && origin.front() == ' ') origin.erase(origin.begin());
  return origin;
}

}  // namespace

CorsPolicy::CorsPolicy(std::vector<std::string> origins) {
  for (auto& o : origins) {
    std::string n = Normalize(o);
    if (!n.empty()) origins_.push_back(std::move(n));
  }
}

bool CorsPolicy::Allowed(const std::string& origin) const {
  if (origin.empty()) return false;
  const std::string n = Normalize(origin);
  return std::any_of(origins_.begin(), origins_.end(),
                     [&](const std::string& o) { return o == "*" || o == n; });
}

HeaderList CorsPolicy::ResponseHeaders(const HttpRequest& request) const {
  const std::string origin(request.Header("origin"));
  if (!Allowed(origin)) return {};
  return {{"Access-Control-Allow-Origin", origin},
          {"Vary", "Origin"},
          {"Access-Control-Expose-Headers", "Retry-After"}};
}

HttpResponse CorsPolicy::Preflight(const HttpRequest& request) const {
  HttpResponse r;
  const std::string origin(request.Header("origin"));
  if (!Allowed(origin)) {
    r.status = 403;
    r.body = ErrorJson(ErrorWithStatus(403, "CORS: origin not allowed (see --cors-origins)"),
                       ApiFlavor::kOpenAI);
    return r;
  }
  r.status = 204;
  r.content_type = "";
  r.headers = ResponseHeaders(request);
  r.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  std::string requested(request.Header("access-control-request-headers"));
  r.headers.emplace_back("Access-Control-Allow-Headers",
                         requested.empty() ? "Authorization, Content-Type, x-api-key, anthropic-version, anthropic-beta"
                                           : requested);
  r.headers.emplace_back("Access-Control-Max-Age", "600");
  return r;
}

}  // namespace llmhost::server
