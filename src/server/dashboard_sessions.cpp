#include "server/dashboard_sessions.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>

#include "util/hmac.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(out.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      // Without randomness the sessions could be forged: refuse to run.
      LOG_ERROR("dashboard: getrandom failed; cannot create session secrets");
      std::abort();
    }
    got += static_cast<size_t>(r);
  }
  return out;
}

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

DashboardSessions::DashboardSessions() : secret_(RandomBytes(32)) {}

std::string DashboardSessions::Mac(std::string_view message) const { return ToHex(HmacSha256(secret_, message)); }

DashboardSession DashboardSessions::Describe(const std::string& id, int64_t expires_at) const {
  const std::string signed_part = id + "." + std::to_string(expires_at);
  return DashboardSession{id, signed_part + "." + Mac("session|" + id + "|" + std::to_string(expires_at)),
                          Mac("csrf|" + id), expires_at};
}

DashboardSession DashboardSessions::Create(int64_t now) {
  const std::string random = RandomBytes(16);
  const std::string id = ToHex(reinterpret_cast<const uint8_t*>(random.data()), random.size());
  const int64_t expires_at = now + kLifetimeS;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = live_.begin(); it != live_.end();) {
    it = it->second <= now ? live_.erase(it) : std::next(it);
  }
  while (live_.size() >= kMaxSessions) {
    auto first = live_.begin();
    for (auto it = live_.begin(); it != live_.end(); ++it) {
      if (it->second < first->second) first = it;
    }
    live_.erase(first);
  }
  live_[id] = expires_at;
  return Describe(id, expires_at);
}

std::optional<DashboardSession> DashboardSessions::Verify(std::string_view token, int64_t now) const {
  const size_t dot1 = token.find('.');
  const size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos) return std::nullopt;
  const std::string id(token.substr(0, dot1));
  const std::string_view expiry = token.substr(dot1 + 1, dot2 - dot1 - 1);
  if (id.size() != 32 || !IsHex(id) || expiry.empty() || expiry.size() > 18) return std::nullopt;
  for (char c : expiry) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  const int64_t expires_at = std::stoll(std::string(expiry));
  DashboardSession s = Describe(id, expires_at);
  if (!ConstantTimeEqual(token, s.token) || expires_at <= now) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(id);
  if (it == live_.end() || it->second != expires_at) return std::nullopt;
  return s;
}

void DashboardSessions::Remove(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(id);
}

std::string_view CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t semi = header.find(';');
    std::string_view pair = header.substr(0, semi);
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
  }
  return {};
}

std::string SessionCookie(const std::string& token, int64_t max_age_s, bool secure) {
  return std::string(kSessionCookie) + "=" + token + "; Max-Age=" + std::to_string(max_age_s) +
         "; Path=/; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "");
}

std::string ClearedSessionCookie(bool secure) { return SessionCookie("", 0, secure); }

}  // namespace llmhost::server
