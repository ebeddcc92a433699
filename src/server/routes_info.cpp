// GET /v1/models, /v1/models/{id}, /api/status.
#include <nlohmann/json.hpp>

#include "server/api_server.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

Json ModelJson(const ModelEntry& e, const std::shared_ptr<LoadedModel>& loaded) {
  Json j = {{"id", e.id},
            {"object", "model"},
            {"created", loaded ? loaded->loaded_at : 0},
            {"owned_by", "llmhost"},
            {"loaded", loaded != nullptr}};
  if (loaded) j["context_length"] = loaded->engine->context_length();
  return j;
}

std::shared_ptr<LoadedModel> FindLoaded(const std::vector<std::shared_ptr<LoadedModel>>& loaded,
                                        const std::string& id) {
  for (const auto& m : loaded) {
    if (m->entry.id == id) return m;
  }
  return nullptr;
}

void SendJson(const std::shared_ptr<ResponseWriter>& writer, const Json& j) {
  HttpResponse r;
  r.body = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  writer->Send(std::move(r));
}

}  // namespace

void HandleModels(ApiServer& server, const HttpRequest& request,
                  const std::shared_ptr<ResponseWriter>& writer) {
  const auto loaded = server.registry().Loaded();
  const std::string prefix = "/v1/models/";
  if (request.path.size() > prefix.size()) {
    const std::string id = request.path.substr(prefix.size());
    for (const ModelEntry& e : server.registry().List()) {
      if (e.id == id) return SendJson(writer, ModelJson(e, FindLoaded(loaded, e.id)));
    }
    ApiError err = ErrorWithStatus(404, "The model '" + id + "' does not exist", "model_not_found");
    writer->Send(ErrorResponse(err, ApiFlavor::kOpenAI));
    return;
  }
  Json data = Json::array();
  for (const ModelEntry& e : server.registry().List()) data.push_back(ModelJson(e, FindLoaded(loaded, e.id)));
  SendJson(writer, Json{{"object", "list"}, {"data", std::move(data)}});
}

void HandleStatus(ApiServer& server, const HttpRequest&, const std::shared_ptr<ResponseWriter>& writer) {
  const HttpServerStats h = server.http_stats();
  auto& c = server.counters();
  Json models = Json::array();
  for (const auto& m : server.registry().Loaded()) {
    const EngineStats s = m->engine->Stats();
    models.push_back(
        {{"id", m->entry.id},
         {"context_length", s.context_length},
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
         {"kv",
          {{"bytes", s.kv_cache_bytes},
           {"blocks_total", s.kv.blocks_total},
           {"blocks_used", s.kv.blocks_used},
           {"blocks_free", s.kv.blocks_free},
           {"blocks_cached", s.kv.blocks_cached},
           {"prefix_lookups", s.kv.lookups},
           {"prefix_hits", s.kv.hits},
           {"prefix_cached_tokens", s.kv.cached_tokens}}}});
  }
  Json j = {{"uptime_s", server.uptime_s()},
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
  SendJson(writer, j);
}

}  // namespace llmhost::server
