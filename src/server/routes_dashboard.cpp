// The web dashboard (web/, embedded by cmake/EmbedFiles.cmake):
//   GET  /admin, /admin/<file>   the page and its files; open (they hold no data)
//   GET  /admin/api/session      {"auth":"open"} without API keys; else
//                                {"auth":"key","signed_in", and when signed in "csrf","expires_at"}
//   POST /admin/login {"key"}    a valid API key → a session cookie (dashboard_sessions.h); 401 otherwise
//   POST /admin/logout           ends the session (X-CSRF-Token required) and clears the cookie
// These routes run before the API-key check (api_server.cpp); every other
// route the pages call takes the cookie in place of a key (dashboard_access.h).
#include <nlohmann/json.hpp>

#include "server/api_server.h"
#include "server/dashboard_access.h"
#include "server/pool_json.h"
#include "server/web_assets.h"
#include "util/json.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxKeyBytes = 4096;

// The page loads only its own files and talks only to its own server.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

void SendError(const std::shared_ptr<ResponseWriter>& writer, const ApiError& e) {
  writer->Send(ErrorResponse(e, ApiFlavor::kOpenAI));
}

void ServeAsset(const HttpRequest& request, const std::string& name, const std::shared_ptr<ResponseWriter>& writer) {
  const WebAsset* asset = FindWebAsset(name);
  if (!asset) return SendError(writer, ErrorWithStatus(404, "No dashboard file " + request.path, "not_found"));
  HttpResponse r;
  r.content_type = std::string(ContentTypeFor(name));
  // Names carry no content hash: browsers revalidate every time (a 304 when
  // the ETag still matches), so an upgrade never mixes old and new files.
  r.headers = {
      {"Cache-Control", "no-cache"}, {"ETag", std::string(asset->etag)}, {"X-Content-Type-Options", "nosniff"}};
  if (name == "index.html") {
    r.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
  }
  if (request.Header("if-none-match") == asset->etag) {
    r.status = 304;
    r.content_type.clear();
  } else {
    r.body = std::string(asset->bytes);
  }
  writer->Send(std::move(r));
}

void Session(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  if (server.auth().open()) return SendJson(writer, Json{{"auth", "open"}});
  std::optional<DashboardSession> s = SessionOf(server.sessions(), request, UnixNow());
  if (!s) return SendJson(writer, Json{{"auth", "key"}, {"signed_in", false}});
  SendJson(writer, Json{{"auth", "key"}, {"signed_in", true}, {"csrf", s->csrf}, {"expires_at", s->expires_at}});
}

void Login(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  if (server.auth().open()) return SendJson(writer, Json{{"auth", "open"}});
  Result<nlohmann::json> body = ParseJson(request.body, "the request body", request.body.size());
  if (!body.ok()) return SendError(writer, BadRequest(body.status().message()));
  if (!body->is_object() || !body->contains("key") || !(*body)["key"].is_string()) {
    return SendError(writer, BadRequest("the body must be {\"key\": \"<an API key>\"}", "key"));
  }
  const std::string key = (*body)["key"].get<std::string>();
  if (key.size() > kMaxKeyBytes || !server.auth().Matches(key)) {
    LOG_WARN("dashboard: sign-in with a wrong key from " << request.remote);
    return SendError(writer, ErrorWithStatus(401, "Invalid API key", "invalid_api_key"));
  }
  const int64_t now = UnixNow();
  const DashboardSession s = server.sessions().Create(now);
  HttpResponse r;
  r.headers = {{"Set-Cookie", SessionCookie(s.token, s.expires_at - now, /*secure=*/request.tls)}, {"Cache-Control", "no-store"}};
  r.body = Json{{"auth", "key"}, {"signed_in", true}, {"csrf", s.csrf}, {"expires_at", s.expires_at}}.dump();
  writer->Send(std::move(r));
}

void Logout(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  if (std::optional<DashboardSession> s = SessionOf(server.sessions(), request, UnixNow())) {
    if (MaybeError e = CheckCsrf(*s, request)) return SendError(writer, *e);
    server.sessions().Remove(s->id);
  }
  HttpResponse r;
  r.headers = {{"Set-Cookie", ClearedSessionCookie(/*secure=*/request.tls)}};
  r.body = Json{{"signed_in", false}}.dump();
  writer->Send(std::move(r));
}

}  // namespace

void HandleDashboard(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  const std::string& path = request.path;
  if (request.method == "POST" && path == "/admin/login") return Login(server, request, writer);
  if (request.method == "POST" && path == "/admin/logout") return Logout(server, request, writer);
  if (path == "/admin/api/session") return Session(server, request, writer);
  if (path == "/admin") return ServeAsset(request, "index.html", writer);
  const std::string prefix = "/admin/";
  if (path.rfind("/admin/api/", 0) != 0 && path.rfind(prefix, 0) == 0) {
    return ServeAsset(request, path.substr(prefix.size()), writer);
  }
  SendError(writer, ErrorWithStatus(404, "Unknown route: " + request.method + " " + path));
}

}  // namespace llmhost::server
