// GET /metrics: Prometheus's text format (server/metrics.h). What the
// server records as it answers (responses, generations, their latencies)
// and what it reads at the scrape: models, engines, KV cache tiers,
// memory per budget, connections.
#include "chat/output_format.h"
#include "server/api_server.h"
#include "server/metrics.h"
#include "util/version.h"

namespace llmhost::server {

namespace {

using L = Labels;

void Gauge(MetricsText& t, const std::string& name, const std::string& help, double value) {
  t.Family(name, "gauge", help);
  t.Sample(name, {}, value);
}

void Counter(MetricsText& t, const std::string& name, const std::string& help, double value) {
  t.Family(name, "counter", help);
  t.Sample(name, {}, value);
}

void Models(ApiServer& server, MetricsText& t) {
  const std::vector<ModelStatus> models = server.pool().ModelStatuses();
  t.Family("llmhost_model_loaded", "gauge", "1 while the model is loaded.");
  for (const ModelStatus& m : models) t.Sample("llmhost_model_loaded", {{"model", m.id}}, m.loaded ? 1 : 0);
  t.Family("llmhost_model_memory_bytes", "gauge", "Memory a loaded model holds (weights, KV cache, buffers).");
  for (const ModelStatus& m : models)
    if (m.loaded) t.Sample("llmhost_model_memory_bytes", {{"model", m.id}}, static_cast<double>(m.memory_bytes));
  t.Family("llmhost_model_requests_active", "gauge", "Requests holding the model.");
  for (const ModelStatus& m : models)
    t.Sample("llmhost_model_requests_active", {{"model", m.id}}, static_cast<double>(m.active_requests));
  t.Family("llmhost_model_requests_queued", "gauge", "Requests waiting in the pool for the model (load or memory).");
  for (const ModelStatus& m : models)
    t.Sample("llmhost_model_requests_queued", {{"model", m.id}}, static_cast<double>(m.waiting_requests));

  // Engines of the loaded models; their counters start again at a reload.
  struct Loaded {
    std::string id;
    EngineStats stats;
  };
  std::vector<Loaded> engines;
  for (const ModelStatus& m : models) {
    if (!m.loaded) continue;
    if (std::shared_ptr<ServedModel> served = server.pool().Peek(m.id); served && served->engine) {
      engines.push_back({m.id, served->engine->Stats()});
    }
  }
  t.Family("llmhost_engine_requests_running", "gauge", "Sequences in the engine's running batch.");
  for (const Loaded& e : engines) t.Sample("llmhost_engine_requests_running", {{"model", e.id}}, static_cast<double>(e.stats.running));
  t.Family("llmhost_engine_requests_waiting", "gauge", "Sequences queued in the engine, not yet running.");
  for (const Loaded& e : engines) t.Sample("llmhost_engine_requests_waiting", {{"model", e.id}}, static_cast<double>(e.stats.waiting));
  t.Family("llmhost_engine_preemptions_total", "counter", "Sequences preempted to free KV blocks.");
  for (const Loaded& e : engines)
    t.Sample("llmhost_engine_preemptions_total", {{"model", e.id}}, static_cast<double>(e.stats.counters.preemptions));
  t.Family("llmhost_kv_blocks", "gauge", "Paged KV cache blocks by state (cached: free yet still findable by prefix).");
  for (const Loaded& e : engines) {
    t.Sample("llmhost_kv_blocks", {{"model", e.id}, {"state", "used"}}, static_cast<double>(e.stats.kv.blocks_used));
    t.Sample("llmhost_kv_blocks", {{"model", e.id}, {"state", "free"}}, static_cast<double>(e.stats.kv.blocks_free));
    t.Sample("llmhost_kv_blocks", {{"model", e.id}, {"state", "cached"}}, static_cast<double>(e.stats.kv.blocks_cached));
  }
  t.Family("llmhost_kv_cache_bytes", "gauge", "Memory the KV cache holds now.");
  for (const Loaded& e : engines) t.Sample("llmhost_kv_cache_bytes", {{"model", e.id}}, static_cast<double>(e.stats.kv_cache_bytes));
  t.Family("llmhost_prefix_cache_lookups_total", "counter", "Prompts looked up in the paged prefix cache.");
  for (const Loaded& e : engines) t.Sample("llmhost_prefix_cache_lookups_total", {{"model", e.id}}, static_cast<double>(e.stats.kv.lookups));
  t.Family("llmhost_prefix_cache_hits_total", "counter", "Lookups that reused at least one block.");
  for (const Loaded& e : engines) t.Sample("llmhost_prefix_cache_hits_total", {{"model", e.id}}, static_cast<double>(e.stats.kv.hits));
  t.Family("llmhost_prefix_cache_restored_blocks_total", "counter", "Blocks copied back from the hot / SSD tiers.");
  for (const Loaded& e : engines)
    t.Sample("llmhost_prefix_cache_restored_blocks_total", {{"model", e.id}}, static_cast<double>(e.stats.kv.store_restored));
}

void PoolEventsText(ApiServer& server, MetricsText& t) {
  const PoolEvents e = server.pool().Events();
  Counter(t, "llmhost_model_loads_total", "Models loaded.", static_cast<double>(e.loads));
  Counter(t, "llmhost_model_load_failures_total", "Loads that failed.", static_cast<double>(e.load_failures));
  Counter(t, "llmhost_model_load_seconds_total", "Time spent in successful loads.", e.load_seconds);
  t.Family("llmhost_model_unloads_total", "counter",
           "Models unloaded, by cause (evicted_for_load, evicted_for_kv, idle_ttl, memory_pressure, requested, other).");
  for (const auto& [cause, n] : e.unloads) t.Sample("llmhost_model_unloads_total", {{"cause", cause}}, static_cast<double>(n));
}

void KvStore(ApiServer& server, MetricsText& t) {
  TieredBlockStore* store = server.kv_store();
  if (!store) return;
  const TierStats s = store->stats();
  t.Family("llmhost_kv_store_hits_total", "counter", "Blocks served by the KV block store, by tier.");
  t.Sample("llmhost_kv_store_hits_total", {{"tier", "hot"}}, static_cast<double>(s.hot_hits));
  t.Sample("llmhost_kv_store_hits_total", {{"tier", "pending"}}, static_cast<double>(s.pending_hits));
  t.Sample("llmhost_kv_store_hits_total", {{"tier", "ssd"}}, static_cast<double>(s.ssd_hits));
  Counter(t, "llmhost_kv_store_lookups_total", "Prefix lookups in the KV block store.", static_cast<double>(s.hits + s.misses));
  Counter(t, "llmhost_kv_store_saves_total", "Blocks stored in the KV block store.", static_cast<double>(s.saves));
  Counter(t, "llmhost_kv_store_errors_total", "Corrupt, unreadable or failed block files.", static_cast<double>(s.errors));
  t.Family("llmhost_kv_store_bytes", "gauge", "Bytes the KV block store holds, by tier.");
  t.Sample("llmhost_kv_store_bytes", {{"tier", "hot"}}, static_cast<double>(s.hot_bytes));
  t.Sample("llmhost_kv_store_bytes", {{"tier", "pending"}}, static_cast<double>(s.pending_bytes));
  t.Sample("llmhost_kv_store_bytes", {{"tier", "ssd"}}, static_cast<double>(s.ssd_bytes));
}

void Memory(ApiServer& server, MetricsText& t) {
  const MemorySnapshot m = server.pool().Memory();
  struct Budgeted {
    std::string budget;
    const MemoryLimits* limits;
    uint64_t usage, committed;
  };
  std::vector<Budgeted> budgets = {{"host", &m.host, m.usage, m.committed[0]}};
  for (size_t n = 0; n < m.devices.size(); ++n) {
    const DeviceBudgetSnapshot& d = m.devices[n];
    if (!d.present) continue;
    budgets.push_back({"cuda:" + std::to_string(d.cuda_index), &d.limits, d.usage,
                       m.committed[BudgetIndex(GpuBudget(static_cast<int>(n)))]});
  }
  struct Field {
    const char* name;
    const char* help;
  };
  const Field fields[] = {{"llmhost_memory_ceiling_bytes", "The admission ceiling of the budget."},
                          {"llmhost_memory_soft_watermark_bytes", "Above it, idle models are evicted."},
                          {"llmhost_memory_hard_watermark_bytes", "Above it, admission stops and requests may be aborted."},
                          {"llmhost_memory_usage_bytes", "Measured use of the budget."},
                          {"llmhost_memory_committed_bytes", "Bytes admitted models are priced at."}};
  for (size_t f = 0; f < std::size(fields); ++f) {
    t.Family(fields[f].name, "gauge", fields[f].help);
    for (const Budgeted& b : budgets) {
      const uint64_t v = f == 0 ? b.limits->admission_ceiling
                         : f == 1 ? b.limits->soft_bytes
                         : f == 2 ? b.limits->hard_bytes
                         : f == 3 ? b.usage
                                  : b.committed;
      t.Sample(fields[f].name, {{"budget", b.budget}}, static_cast<double>(v));
    }
  }
  Gauge(t, "llmhost_memory_footprint_bytes", "The process's resident memory.", static_cast<double>(m.footprint));
  Gauge(t, "llmhost_memory_pressure_level", "0 ok, 1 above the soft watermark, 2 above the hard one (the worst budget).",
        static_cast<double>(static_cast<int>(m.level)));
}

}  // namespace

void HandleMetrics(ApiServer& server, const HttpRequest&, const std::shared_ptr<ResponseWriter>& writer) {
  MetricsText t;
  t.Family("llmhost_build_info", "gauge", "The running llmhost's version.");
  t.Sample("llmhost_build_info", {{"version", kVersion}}, 1);
  Gauge(t, "llmhost_uptime_seconds", "Seconds since the server started.", static_cast<double>(server.uptime_s()));
  const HttpServerStats http = server.http_stats();
  Gauge(t, "llmhost_http_connections", "Open client connections.", static_cast<double>(http.connections));
  Gauge(t, "llmhost_http_requests_in_flight", "Requests handed to a handler and not yet answered.",
        static_cast<double>(http.requests_active));
  Counter(t, "llmhost_http_connections_refused_total", "Connections refused over the connection limit.",
          static_cast<double>(http.connections_refused));
  Gauge(t, "llmhost_generations_in_flight", "Generations streaming or running now.",
        static_cast<double>(server.relay_count()));
  server.metrics().Write(t);
  Models(server, t);
  PoolEventsText(server, t);
  KvStore(server, t);
  Memory(server, t);
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = t.str();
  writer->Send(std::move(r));
}

}  // namespace llmhost::server
