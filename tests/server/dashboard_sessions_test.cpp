#include "server/dashboard_sessions.h"

#include <gtest/gtest.h>

#include "server/dashboard_access.h"

namespace llmhost::server::dashboard_sessions_test {
namespace {

constexpr int64_t kNow = 1'800'000'000;

HttpRequest Request(std::string method, std::string path, HeaderList headers) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.headers = std::move(headers);
  return r;
}

TEST(DashboardSessionsTest, ACreatedSessionVerifiesUntilItExpires) {
  DashboardSessions sessions;
  const DashboardSession s = sessions.Create(kNow);
  EXPECT_EQ(s.expires_at, kNow + DashboardSessions::kLifetimeS);
  auto v = sessions.Verify(s.token, kNow + 10);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->id, s.id);
  EXPECT_EQ(v->csrf, s.csrf);
  EXPECT_FALSE(sessions.Verify(s.token, s.expires_at).has_value());
}

TEST(DashboardSessionsTest, TamperedOrForeignTokensAreRefused) {
  DashboardSessions sessions, other;
  const DashboardSession s = sessions.Create(kNow);
  std::string later = s.token;
  const size_t dot = later.find('.');
  later[dot + 1] = later[dot + 1] == '9' ? '8' : '9';  // another expiry, same MAC
  EXPECT_FALSE(sessions.Verify(later, kNow).has_value());
  std::string flipped = s.token;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  EXPECT_FALSE(sessions.Verify(flipped, kNow).has_value());
  EXPECT_FALSE(other.Verify(s.token, kNow).has_value());  // another server's secret
  for (const char* bad : {"", ".", "..", "abc", "x.1.y", "0123456789abcdef0123456789abcdef.-5.00"}) {
    EXPECT_FALSE(sessions.Verify(bad, kNow).has_value()) << bad;
  }
}

TEST(DashboardSessionsTest, RemovedSessionsAndEvictedOnesEnd) {
  DashboardSessions sessions;
  const DashboardSession s = sessions.Create(kNow);
  sessions.Remove(s.id);
  EXPECT_FALSE(sessions.Verify(s.token, kNow).has_value());
  const DashboardSession first = sessions.Create(kNow);
  for (size_t i = 0; i < DashboardSessions::kMaxSessions; ++i) sessions.Create(kNow + 1);
  EXPECT_FALSE(sessions.Verify(first.token, kNow + 2).has_value());  // expired first, dropped first
}

TEST(DashboardSessionsTest, CookieHeaders) {
  EXPECT_EQ(CookieValue("a=1; llmhost_session=tok; b=2", kSessionCookie), "tok");
  EXPECT_EQ(CookieValue("xllmhost_session=no", kSessionCookie), "");
  EXPECT_EQ(CookieValue("", kSessionCookie), "");
  EXPECT_EQ(SessionCookie("t", 60, false), "llmhost_session=t; Max-Age=60; Path=/; HttpOnly; SameSite=Strict");
  EXPECT_EQ(SessionCookie("t", 60, true), "llmhost_session=t; Max-Age=60; Path=/; HttpOnly; SameSite=Strict; Secure");
  EXPECT_EQ(ClearedSessionCookie(false), "llmhost_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict");
}

TEST(DashboardAccessTest, TheCookieStandsInForAKeyOnTheDashboardsRoutes) {
  ApiKeyAuth auth({"secret"});
  DashboardSessions sessions;
  const DashboardSession s = sessions.Create(kNow);
  const std::pair<std::string, std::string> cookie{"cookie", std::string(kSessionCookie) + "=" + s.token};
  EXPECT_FALSE(CheckAccess(auth, sessions, Request("GET", "/api/status", {cookie}), kNow).has_value());
  EXPECT_FALSE(CheckAccess(auth, sessions, Request("GET", "/v1/models/status", {cookie}), kNow).has_value());
  auto no_cookie = CheckAccess(auth, sessions, Request("GET", "/api/status", {}), kNow);
  ASSERT_TRUE(no_cookie.has_value());
  EXPECT_EQ(no_cookie->status, 401);
  auto metrics = CheckAccess(auth, sessions, Request("GET", "/metrics", {cookie}), kNow);
  ASSERT_TRUE(metrics.has_value());
  EXPECT_EQ(metrics->status, 401);
  // A wrong key is not rescued by a good cookie.
  auto wrong_key = CheckAccess(auth, sessions, Request("GET", "/api/status", {cookie, {"x-api-key", "nope"}}), kNow);
  ASSERT_TRUE(wrong_key.has_value());
  EXPECT_EQ(wrong_key->status, 401);
}

TEST(DashboardAccessTest, PostsWithTheCookieNeedTheCsrfToken) {
  ApiKeyAuth auth({"secret"});
  DashboardSessions sessions;
  const DashboardSession s = sessions.Create(kNow);
  const std::pair<std::string, std::string> cookie{"cookie", std::string(kSessionCookie) + "=" + s.token};
  const std::string path = "/admin/api/models/m/unload";
  auto none = CheckAccess(auth, sessions, Request("POST", path, {cookie}), kNow);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->status, 403);
  auto wrong = CheckAccess(auth, sessions, Request("POST", path, {cookie, {"x-csrf-token", s.id}}), kNow);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_EQ(wrong->status, 403);
  EXPECT_FALSE(CheckAccess(auth, sessions, Request("POST", path, {cookie, {"x-csrf-token", s.csrf}}), kNow));
  // A key needs no token.
  EXPECT_FALSE(CheckAccess(auth, sessions, Request("POST", path, {{"authorization", "Bearer secret"}}), kNow));
}

}  // namespace
}  // namespace llmhost::server::dashboard_sessions_test
