// The KV cache tiers in the admin API:
//   GET  /admin/api/cache             the tiers' figures (as in /api/status "cache")
//   POST /admin/api/cache/clear-hot   drops the hot tier (write-back: dirty blocks go to the SSD first)
//   POST /admin/api/cache/clear-ssd   deletes every block file
// Without a store (--cache-mode off): 404 naming the flag.
#include <nlohmann/json.hpp>

#include "server/api_server.h"
#include "server/pool_json.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

Json Counters(const TierStats& s) {
  return Json{{"saves", s.saves}, {"loads", s.loads}, {"hits", s.hits}, {"misses", s.misses}, {"errors", s.errors}};
}

}  // namespace

Json CacheJson(const TieredBlockStore& store) {
  const TierStats s = store.stats();
  const TieredStoreOptions& o = store.options();
  Json j = {{"mode", CacheModeName(o.mode)}};
  const Json counters = Counters(s);  // (a temporary's items() would dangle)
  for (const auto& [k, v] : counters.items()) j[k] = v;
  j["duplicate_saves"] = s.duplicate_saves;
  j["inline_writes"] = s.inline_writes;
  j["hot"] = {{"bytes", s.hot_bytes},     {"blocks", s.hot_blocks},       {"max_bytes", s.hot_max_bytes},
              {"hits", s.hot_hits},       {"evictions", s.hot_evictions}, {"promotions", s.hot_promotions}};
  j["pending"] = {{"bytes", s.pending_bytes}, {"blocks", s.pending_blocks}, {"hits", s.pending_hits}};
  j["ssd"] = {{"dir", o.cache_dir},
              {"bytes", s.ssd_bytes},
              {"files", s.ssd_files},
              {"max_bytes", s.ssd_max_bytes},
              {"effective_max_bytes", s.ssd_effective_max_bytes},
              {"writable", s.ssd_writable},
              {"hits", s.ssd_hits},
              {"writes", s.ssd_writes},
              {"evictions", s.ssd_evictions}};
  Json models = Json::object();
  for (const auto& [id, ms] : store.stats_by_model()) models[id] = Counters(ms);
  j["models"] = std::move(models);
  return j;
}

void HandleCache(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  TieredBlockStore* store = server.kv_store();
  if (!store) {
    writer->Send(ErrorResponse(
        ErrorWithStatus(404, "the KV cache tiers are off (--cache-mode off): there is no cache to show or clear"),
        ApiFlavor::kOpenAI));
    return;
  }
  if (request.method == "GET" && request.path == "/admin/api/cache") return SendJson(writer, CacheJson(*store));
  if (request.method == "POST" && request.path == "/admin/api/cache/clear-hot") {
    const uint64_t blocks = store->stats().hot_blocks;
    store->ClearHot();
    LOG_INFO("admin: cleared the hot KV tier (" << blocks << " blocks)");
    return SendJson(writer, Json{{"cleared", blocks}});
  }
  if (request.method == "POST" && request.path == "/admin/api/cache/clear-ssd") {
    const uint64_t files = store->ClearSsd();
    LOG_INFO("admin: cleared the SSD KV tier (" << files << " files)");
    return SendJson(writer, Json{{"cleared", files}});
  }
  writer->Send(ErrorResponse(ErrorWithStatus(404, "Unknown route: " + request.method + " " + request.path +
                                                      " (use GET /admin/api/cache, POST /admin/api/cache/clear-hot "
                                                      "or /admin/api/cache/clear-ssd)"),
                             ApiFlavor::kOpenAI));
}

}  // namespace llmhost::server
