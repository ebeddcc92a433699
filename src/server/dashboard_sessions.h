// Dashboard sign-in sessions: an API key is exchanged (POST /admin/login) for
// a session cookie that the dashboard's API calls send in place of the key.
//
// Token: "<id>.<expires>.<mac>": a random 128-bit id (hex), the expiry in
// Unix seconds, and HMAC-SHA-256(secret, "session|<id>|<expires>") (hex);
// the secret is random per server process, so a restart signs everyone out.
// A token is valid when its MAC matches (constant-time), it has not expired,
// and its id is still registered (logout removes it).
// CSRF token of a session: HMAC-SHA-256(secret, "csrf|<id>") (hex). Requests
// authenticated by the cookie that change state (anything but GET/HEAD) must
// send it in X-CSRF-Token; the page reads it from GET /admin/api/session.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace llmhost::server {

inline constexpr const char* kSessionCookie = "llmhost_session";

struct DashboardSession {
  std::string id;
  std::string token;       // the cookie's value
  std::string csrf;        // X-CSRF-Token's value
  int64_t expires_at = 0;  // Unix seconds
};

class DashboardSessions {
 public:
  static constexpr int64_t kLifetimeS = 12 * 3600;
  static constexpr size_t kMaxSessions = 256;  // beyond: the one expiring first is dropped

  DashboardSessions();  // a random secret (getrandom)

  DashboardSession Create(int64_t now);
  // The session `token` names when it is valid at `now`.
  std::optional<DashboardSession> Verify(std::string_view token, int64_t now) const;
  void Remove(const std::string& id);

 private:
  std::string Mac(std::string_view message) const;  // hex
  DashboardSession Describe(const std::string& id, int64_t expires_at) const;

  std::string secret_;  // 32 random bytes
  mutable std::mutex mu_;
  std::map<std::string, int64_t> live_;  // id → expiry; guarded by mu_
};

// The value of cookie `name` in a Cookie header ("a=1; b=2"), "" when absent.
std::string_view CookieValue(std::string_view cookie_header, std::string_view name);

// Set-Cookie values: the session (HttpOnly, SameSite=Strict, Path=/, Max-Age;
// Secure when `secure`) and its removal.
std::string SessionCookie(const std::string& token, int64_t max_age_s, bool secure);
std::string ClearedSessionCookie(bool secure);

}  // namespace llmhost::server
