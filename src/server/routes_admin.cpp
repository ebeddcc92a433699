// The admin API (/admin/api/...) over the engine pool:
//   GET  /admin/api/models                      every model with state and memory, and the memory figures
//   GET  /admin/api/models/{id}                 one model, with its settings
//   POST /admin/api/models/{id}/load            200 once loaded (waits for memory like a request)
//   POST /admin/api/models/{id}/unload          200 unloaded, 202 {"status":"unloading"} when busy
//   POST /admin/api/models/{id}/unload-if-idle  200, or 409 when pinned, loading or serving
//   POST /admin/api/models/{id}/pin, /unpin     the settings after the change
//   GET  /admin/api/models/{id}/settings        per-model settings
//   PUT  /admin/api/models/{id}/settings        a patch (null removes a field), applied now
//   DELETE /admin/api/models/{id}               deletes its files: {"status":"deleted","id","bytes",
//                                               "removed":[paths]}; 409 when pinned or in use
//   POST /admin/api/reload                      re-runs model discovery
//   GET  /admin/api/history                     the dashboard's charts (routes_history.cpp)
//   GET  /admin/api/logs                        a live log tail over SSE (log_streams.h)
//   GET  /admin/api/cache, POST .../clear-hot|clear-ssd   the KV cache tiers (routes_cache.cpp)
//   POST /v1/models/{id}/unload                 as the admin unload
// Model ids may contain '/': the action is the last path segment.
#include <nlohmann/json.hpp>

#include "server/api_server.h"
#include "server/pool_errors.h"
#include "server/pool_json.h"
#include "util/json.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kActions[] = {"load", "unload", "unload-if-idle", "pin", "unpin", "settings"};

void SendError(const std::shared_ptr<ResponseWriter>& writer, const ApiError& e) {
  writer->Send(ErrorResponse(e, ApiFlavor::kOpenAI));
}

// "/admin/api/models/org/Model/unload" → {"org/Model", "unload"}.
std::pair<std::string, std::string> SplitIdAction(const std::string& rest) {
  const size_t slash = rest.rfind('/');
  if (slash != std::string::npos) {
    const std::string last = rest.substr(slash + 1);
    for (const char* a : kActions) {
      if (last == a) return {rest.substr(0, slash), last};
    }
  }
  return {rest, ""};
}

Json SettingsJson(const std::string& id, const ModelSettings& s) {
  return Json{{"id", id}, {"settings", Json::parse(ModelSettingsToJson(s).dump())}};
}

void Unload(ApiServer& server, const std::string& id, const std::shared_ptr<ResponseWriter>& writer) {
  UnloadResult u = server.pool().Unload(id);
  if (!u.ok()) return SendError(writer, PoolApiError(u.error));
  LOG_INFO("admin: unload " << id << ": " << (u.outcome == UnloadOutcome::kPending ? "pending" : "done"));
  if (u.outcome == UnloadOutcome::kPending) return SendJson(writer, Json{{"status", "unloading"}}, 202);
  SendJson(writer, Json{{"status", "ok"}});
}

void ModelAction(ApiServer& server, const HttpRequest& request, const std::string& rest,
                 const std::shared_ptr<ResponseWriter>& writer) {
  EnginePool& pool = server.pool();
  auto [name, action] = SplitIdAction(rest);
  Result<std::string> resolved = pool.Resolve(name);
  if (!resolved.ok()) {
    return SendError(writer, ErrorWithStatus(404, resolved.status().message(), "model_not_found"));
  }
  const std::string id = *resolved;
  const std::string& m = request.method;
  if (action.empty() && (m == "GET" || m == "HEAD")) {
    for (const ModelStatus& s : pool.ModelStatuses()) {
      if (s.id != id) continue;
      Json j = ModelStatusJson(s, true);
      j["settings"] = SettingsJson(id, *pool.Settings(id))["settings"];
      return SendJson(writer, j);
    }
  }
  if (action == "settings" && (m == "GET" || m == "HEAD")) {
    auto s = pool.Settings(id);
    if (!s.ok()) return SendError(writer, ErrorWithStatus(404, s.status().message(), "model_not_found"));
    return SendJson(writer, SettingsJson(id, *s));
  }
  if (action == "settings" && (m == "PUT" || m == "POST")) {
    Result<nlohmann::json> patch = ParseJson(request.body, "the request body", request.body.size());
    if (!patch.ok()) return SendError(writer, BadRequest(patch.status().message()));
    if (!patch->is_object()) {
      return SendError(writer, BadRequest("the body must be a JSON object of model settings"));
    }
    auto s = pool.UpdateSettings(id, *patch);
    if (!s.ok()) {
      const std::string& msg = s.status().message();
      // Validation names the field first ("chat_template_kwargs.a: ...").
      const size_t colon = msg.find(':');
      const std::string field = colon == std::string::npos ? "" : msg.substr(0, colon);
      const bool is_field = !field.empty() && field.find(' ') == std::string::npos;
      ApiError e = BadRequest(msg, is_field ? field : "");
      if (s.status().code() != StatusCode::kInvalidArgument) e = ErrorWithStatus(500, msg);
      return SendError(writer, e);
    }
    LOG_INFO("admin: settings of " << id << " changed: " << patch->dump());
    return SendJson(writer, SettingsJson(id, *s));
  }
  if (action.empty() && m == "DELETE") {
    DeleteResult d = pool.DeleteModel(id);
    if (!d.ok()) return SendError(writer, PoolApiError(d.error));
    LOG_INFO("admin: deleted " << d.id);
    Json removed = Json::array();
    for (const std::string& p : d.removal.removed) removed.push_back(p);
    return SendJson(writer, Json{{"status", "deleted"}, {"id", d.id}, {"bytes", d.removal.bytes},
                                 {"removed", std::move(removed)}});
  }
  if (m != "POST") {
    return SendError(writer, ErrorWithStatus(405, "Method " + m + " is not allowed on " + request.path));
  }
  if (action == "load") {
    // Waits (in the pool's queue, no thread held) like a request would.
    pool.AcquireAsync(id, [writer, id](AcquireResult r) {
      if (!r.ok()) {
        if (r.error.code != PoolErrorCode::kCancelled) SendError(writer, PoolApiError(r.error));
        return;
      }
      r.lease.reset();
      SendJson(writer, Json{{"status", "ok"}, {"model", id}});
    });
    return;
  }
  if (action == "unload") return Unload(server, id, writer);
  if (action == "unload-if-idle") {
    PoolError e = pool.UnloadIfIdle(id);
    if (!e.ok()) return SendError(writer, PoolApiError(e));
    return SendJson(writer, Json{{"status", "ok"}});
  }
  if (action == "pin" || action == "unpin") {
    auto s = pool.SetPinned(id, action == "pin");
    if (!s.ok()) return SendError(writer, BadRequest(s.status().message()));
    return SendJson(writer, SettingsJson(id, *s));
  }
  SendError(writer, ErrorWithStatus(404, "Unknown route: " + m + " " + request.path));
}

}  // namespace

void HandleAdmin(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  const std::string models = "/admin/api/models";
  const std::string v1 = "/v1/models/";
  if (request.path == models) {
    Json list = Json::array();
    for (const ModelStatus& m : server.pool().ModelStatuses()) list.push_back(ModelStatusJson(m, true));
    return SendJson(writer, Json{{"models", std::move(list)},
                                 {"memory", MemoryJson(server.pool().Memory(), server.pool().load_seconds_per_gb())}});
  }
  if (request.path == "/admin/api/cache" || request.path.rfind("/admin/api/cache/", 0) == 0) {
    return HandleCache(server, request, writer);
  }
  if (request.path == "/admin/api/history") return HandleHistory(server, request, writer);
  if (request.path == "/admin/api/logs") return server.log_streams().Start(request, writer);
  if (request.path == "/admin/api/reload") {
    server.pool().Rediscover();
    LOG_INFO("admin: models rediscovered");
    return SendJson(writer, Json{{"status", "ok"}, {"models", server.pool().Models().size()}});
  }
  if (request.path.rfind(models + "/", 0) == 0) {
    return ModelAction(server, request, request.path.substr(models.size() + 1), writer);
  }
  if (request.path.rfind(v1, 0) == 0) {
    auto [name, action] = SplitIdAction(request.path.substr(v1.size()));
    if (action == "unload") {
      Result<std::string> id = server.pool().Resolve(name);
      if (!id.ok()) return SendError(writer, ErrorWithStatus(404, id.status().message(), "model_not_found"));
      return Unload(server, *id, writer);
    }
  }
  SendError(writer, ErrorWithStatus(404, "Unknown route: " + request.method + " " + request.path));
}

}  // namespace llmhost::server
