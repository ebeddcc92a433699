#include "server/dashboard_access.h"

#include <chrono>

#include "util/hmac.h"

namespace llmhost::server {

namespace {

// The API the dashboard's pages call (exact paths, or prefixes ending in '/').
constexpr const char* kDashboardApi[] = {"/api/status", "/v1/models", "/v1/models/", "/v1/chat/completions",
                                         "/admin/api/"};

bool ChangesState(const std::string& method) { return method != "GET" && method != "HEAD"; }

}  // namespace

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool DashboardMayCall(std::string_view path) {
  for (std::string_view p : kDashboardApi) {
    if (p.back() == '/' ? path.size() > p.size() && path.substr(0, p.size()) == p : path == p) return true;
  }
  return false;
}

std::optional<DashboardSession> SessionOf(const DashboardSessions& sessions, const HttpRequest& request, int64_t now) {
  const std::string_view token = CookieValue(request.Header("cookie"), kSessionCookie);
  if (token.empty()) return std::nullopt;
  return sessions.Verify(token, now);
}

MaybeError CheckCsrf(const DashboardSession& session, const HttpRequest& request) {
  if (ConstantTimeEqual(request.Header("x-csrf-token"), session.csrf)) return std::nullopt;
  return ErrorWithStatus(403, "CSRF token missing or wrong: send the X-CSRF-Token that GET /admin/api/session gives",
                         "csrf_token_invalid");
}

MaybeError CheckAccess(const ApiKeyAuth& auth, const DashboardSessions& sessions, const HttpRequest& request,
                       int64_t now) {
  const bool sent_key = !request.Header("authorization").empty() || !request.Header("x-api-key").empty();
  if (auth.open() || sent_key || !DashboardMayCall(request.path)) return auth.Check(request);
  std::optional<DashboardSession> session = SessionOf(sessions, request, now);
  if (!session) return auth.Check(request);
  if (ChangesState(request.method)) return CheckCsrf(*session, request);
  return std::nullopt;
}

}  // namespace llmhost::server
