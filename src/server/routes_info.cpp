// GET /v1/models, /v1/models/{id}, /v1/models/status, /api/status.
#include <nlohmann/json.hpp>

#include "server/api_server.h"
#include "server/live_requests_json.h"
#include "server/pool_json.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

// OpenAI's model object; the id is the alias when one is set (what clients
// should send), "root" the model's own id.
Json ModelJson(const ModelStatus& m) {
  Json j = {{"id", m.alias ? *m.alias : m.id},
            {"object", "model"},
            {"created", m.last_access ? static_cast<int64_t>(*m.last_access) : 0},
            {"owned_by", "llmhost"},
            {"root", m.id},
            {"kind", ModelKindName(m.kind)},
            {"loaded", m.loaded}};
  if (m.max_context_window) j["context_length"] = *m.max_context_window;
  return j;
}

Json EngineJson(const EngineStats& s) {
  return Json{{"context_length", s.context_length},
              {"running", s.running},
              {"waiting", s.waiting},
              {"submitted", s.submitted},
              {"rejected", s.rejected},
              {"steps", s.counters.steps},
              {"finished", s.counters.finished},
              {"aborted", s.counters.aborted},
              {"failed", s.counters.failed},
              {"preemptions", s.counters.preemptions},
              {"prompt_tokens", s.counters.prompt_tokens},
              {"cached_tokens", s.counters.cached_tokens},
              {"prefill_tokens", s.counters.prefill_tokens},
              {"generated_tokens", s.counters.generated_tokens},
              {"kv_cache_bytes", s.kv_cache_bytes},
              {"kv_max_bytes", s.kv_max_bytes},
              {"kv_dtype", KvDtypeName(s.kv_dtype)},
              {"kv",
               {{"blocks_total", s.kv.blocks_total},
                {"blocks_used", s.kv.blocks_used},
                {"blocks_free", s.kv.blocks_free},
                {"blocks_cached", s.kv.blocks_cached},
                {"prefix_lookups", s.kv.lookups},
                {"prefix_hits", s.kv.hits},
                {"prefix_cached_tokens", s.kv.cached_tokens},
                {"store_ready", s.kv.store_ready}}}};
}

}  // namespace

void HandleModels(ApiServer& server, const HttpRequest& request,
                  const std::shared_ptr<ResponseWriter>& writer) {
  const std::vector<ModelStatus> models = server.pool().ModelStatuses();
  const std::string prefix = "/v1/models/";
  if (request.path.size() > prefix.size()) {
    const std::string name = request.path.substr(prefix.size());
    Result<std::string> id = server.pool().Resolve(name);
    for (const ModelStatus& m : models) {
      if (id.ok() && m.id == *id) return SendJson(writer, ModelJson(m));
    }
    ApiError err = ErrorWithStatus(404, "The model '" + name + "' does not exist", "model_not_found");
    writer->Send(ErrorResponse(err, ApiFlavor::kOpenAI));
    return;
  }
  Json data = Json::array();
  for (const ModelStatus& m : models) {
    if (!m.hidden) data.push_back(ModelJson(m));
  }
  SendJson(writer, Json{{"object", "list"}, {"data", std::move(data)}});
}

void HandleModelsStatus(ApiServer& server, const HttpRequest&, const std::shared_ptr<ResponseWriter>& writer) {
  Json models = Json::array();
  for (const ModelStatus& m : server.pool().ModelStatuses()) models.push_back(ModelStatusJson(m, false));
  SendJson(writer, Json{{"models", std::move(models)}});
}

void HandleStatus(ApiServer& server, const HttpRequest&, const std::shared_ptr<ResponseWriter>& writer) {
  const HttpServerStats h = server.http_stats();
  auto& c = server.counters();
  EnginePool& pool = server.pool();
  const RequestCounts rc = pool.Requests();
  Json models = Json::array();
  for (const ModelStatus& m : pool.ModelStatuses()) {
    Json j = ModelStatusJson(m, true);
    if (m.loaded) {
      // Statistics without a lease: reading them must not count as a use.
      if (std::shared_ptr<ServedModel> served = pool.Peek(m.id); served && served->engine) {
        // The engine's statistics beside the pool's figures (no key is shared).
        const Json engine = EngineJson(served->engine->Stats());
        for (const auto& [key, value] : engine.items()) j[key] = value;
        const LiveRequests live = served->engine->Live();
        j["requests"] = LiveRequestsJson(live, std::chrono::steady_clock::now());
        j["requests_total"] = live.total;  // more than the list holds when it is capped
      }
    }
    models.push_back(std::move(j));
  }
  Json j = {{"uptime_s", server.uptime_s()},
            {"memory", MemoryJson(pool.Memory(), pool.load_seconds_per_gb())},
            {"requests",
             {{"active", rc.active}, {"waiting", rc.waiting}, {"memory_blocked", rc.memory_blocked}}},
            {"http",
             {{"connections", h.connections},
              {"requests_active", h.requests_active},
              {"requests_total", h.requests_total},
              {"generations_active", static_cast<int64_t>(server.relay_count())}}},
            {"totals",
             {{"generations", c.generations.load()},
              {"prompt_tokens", c.prompt_tokens.load()},
              {"cached_tokens", c.cached_tokens.load()},
              {"completion_tokens", c.completion_tokens.load()}}},
            {"models", std::move(models)}};
  if (TieredBlockStore* store = server.kv_store()) {
    j["cache"] = CacheJson(*store);
  } else {
    j["cache"] = {{"mode", "off"}};
  }
  if (MemoryEnforcer* e = server.enforcer()) {
    const EnforcerTick t = e->last_tick();
    Json actions = Json::array();
    for (const auto& a : t.actions) actions.push_back(a);
    j["memory"]["enforcer"] = {{"level", PressureLevelName(t.level)}, {"emergency", t.emergency},
                               {"last_actions", std::move(actions)}};
  }
  SendJson(writer, j);
}

}  // namespace llmhost::server
