// Who may use an API route: an API key (ApiKeyAuth), or, on the routes the
// dashboard calls, a valid dashboard session cookie (dashboard_sessions.h);
// a cookie-authenticated request that changes state (anything but GET/HEAD)
// must also carry the session's X-CSRF-Token, else 403. A key, when sent,
// decides alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "server/api_error.h"
#include "server/auth.h"
#include "server/dashboard_sessions.h"
#include "server/http_types.h"

namespace llmhost::server {

// The session named by the request's cookie, when valid at `now`.
std::optional<DashboardSession> SessionOf(const DashboardSessions& sessions, const HttpRequest& request, int64_t now);
// nullopt when the CSRF header matches the session's token, else a 403.
MaybeError CheckCsrf(const DashboardSession& session, const HttpRequest& request);
// Whether the dashboard's session cookie may stand in for a key on `path`.
bool DashboardMayCall(std::string_view path);

// nullopt when `request` may proceed; else 401 (no valid key or session) or
// 403 (a session without its CSRF token).
MaybeError CheckAccess(const ApiKeyAuth& auth, const DashboardSessions& sessions, const HttpRequest& request,
                       int64_t now);

// Unix seconds now.
int64_t UnixNow();

}  // namespace llmhost::server
