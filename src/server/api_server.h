// ApiServer: llmhost's HTTP API over an HttpServer and an EnginePool.
//
// Routes (one table, api_server.cpp):
//   GET  /health                         open, {"status":"ok"}
//   GET  /metrics                        Prometheus metrics (routes_metrics.cpp)
//   GET  /v1/models, /v1/models/{id}     models under --model-dir (id = alias when set)
//   GET  /v1/models/status               every model: loaded, memory, TTL, requests
//   POST /v1/models/{id}/unload          as /admin/api/models/{id}/unload
//   POST /v1/chat/completions            OpenAI chat
//   POST /v1/completions                 OpenAI text completions
//   POST /v1/messages                    Anthropic Messages
//   POST /v1/messages/count_tokens       Anthropic token count
//   POST /v1/responses                   OpenAI Responses; GET /v1/responses/{id}: a stored one
//   POST /v1/embeddings, /api/embed      embeddings (OpenAI, Ollama) of an embedding model
//   POST /v1/rerank, /v2/rerank, /rerank relevance scores of a rerank model (routes_embeddings.cpp)
//   GET  /api/status                     memory, models, requests, HTTP and engine statistics
//   POST /api/pull, /admin/api/models/pull  a model from the Hugging Face Hub (routes_pull.cpp)
//   POST /api/chat, /api/generate        Ollama (NDJSON streams); GET /api/version, /api/tags,
//                                        /api/ps, POST /api/show, DELETE /api/delete (routes_ollama.cpp)
//   /admin/api/...                       models (list, load, unload, unload-if-idle, pin,
//                                        unpin, settings, DELETE), reload (routes_admin.cpp)
//   GET  /admin/api/history              the last hour's throughput, TTFT and memory (routes_history.cpp)
//   GET  /admin/api/logs                 a live tail of the log over SSE (log_streams.h)
//   GET, POST /admin/api/bench; GET, DELETE /admin/api/bench/{id}
//                                        the dashboard's Bench runs and kept results (routes_bench.cpp)
//   GET  /admin, /admin/<file>; POST /admin/login, /admin/logout; GET /admin/api/session
//                                        the web dashboard and its sign-in (routes_dashboard.cpp)
//   OPTIONS *                            CORS preflight
// Every route but /health, the dashboard's and preflights needs an API key
// when keys are set (or, on the routes the dashboard calls, its session
// cookie: dashboard_access.h).
//
// Run() serves until SIGINT/SIGTERM (or Shutdown()), drains, cancels what
// is still generating, and returns. Then stop the pool (EnginePool::Shutdown:
// an engine's thread may hold the last reference to a request's connection,
// which must be released while the HTTP server exists), destroy the
// ApiServer, and only then the pool.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "kv/tiered_block_store.h"
#include "pool/engine_pool.h"
#include "pool/memory_enforcer.h"
#include "server/auth.h"
#include "server/bench_runs.h"
#include "server/cors.h"
#include "server/dashboard_sessions.h"
#include "server/generation_relay.h"
#include "server/host_guard.h"
#include "server/metrics.h"
#include "server/http_server.h"
#include "server/log_streams.h"
#include "server/response_store.h"
#include "server/serve_settings.h"
#include "server/stats_history.h"

namespace llmhost::server {

class ApiServer {
 public:
  // Binds the port. `pool` (and `enforcer` and `kv_store`, which may be
  // null) must outlive the server. `tls` set: HTTPS only (loaded from the
  // settings' ssl_cert / ssl_key by the caller, so that a bad file stops it early).
  static Result<std::unique_ptr<ApiServer>> Create(const ServeSettings& settings, EnginePool* pool,
                                                   MemoryEnforcer* enforcer, bool handle_signals,
                                                   TieredBlockStore* kv_store = nullptr,
                                                   std::shared_ptr<const TlsServerContext> tls = nullptr);
  ~ApiServer();

  int port() const { return http_->port(); }
  void Run();
  void Shutdown() { http_->Shutdown(); }

  // --- For the route handlers (routes_*.cpp) ---
  struct Counters {
    std::atomic<int64_t> generations{0}, prompt_tokens{0}, cached_tokens{0}, completion_tokens{0};
    std::atomic<int64_t> first_tokens{0}, ttft_us{0};  // generations with a first token, their TTFT sum
  };
  const ServeSettings& settings() const { return settings_; }
  EnginePool& pool() { return *pool_; }
  MemoryEnforcer* enforcer() { return enforcer_; }
  TieredBlockStore* kv_store() { return kv_store_; }
  Counters& counters() { return counters_; }
  ResponseStore& responses() { return responses_; }
  ServerMetrics& metrics() { return metrics_; }
  const ApiKeyAuth& auth() const { return auth_; }
  DashboardSessions& sessions() { return sessions_; }
  const StatsHistory& history() const { return history_; }
  LogStreams& log_streams() { return log_streams_; }
  BenchRuns& bench() { return bench_; }
  HttpServerStats http_stats() const { return http_->stats(); }
  int64_t uptime_s() const;
  // Runs `fn` on a thread of its own (a model pull): when the server stops
  // it sets `cancel` and waits for `fn` to return. Refused (false) once the
  // server is stopping.
  bool RunBackground(std::shared_ptr<std::atomic<bool>> cancel, std::function<void()> fn);
  void AddRelay(const std::shared_ptr<GenerationRelay>& relay);
  void RemoveRelay(const GenerationRelay* relay);
  size_t relay_count() const;

 private:
  ApiServer(const ServeSettings& settings, EnginePool* pool, MemoryEnforcer* enforcer);
  void Handle(HttpRequest request, std::shared_ptr<ResponseWriter> writer);
  void TickerLoop();
  void CancelAllRelays();
  void StopBackground();

  ServeSettings settings_;
  EnginePool* pool_;
  MemoryEnforcer* enforcer_;
  TieredBlockStore* kv_store_ = nullptr;
  ApiKeyAuth auth_;
  CorsPolicy cors_;
  HostGuard host_guard_;
  std::unique_ptr<HttpServer> http_;
  std::chrono::steady_clock::time_point started_;
  Counters counters_;
  ResponseStore responses_;  // the Responses API's stored responses
  ServerMetrics metrics_;
  DashboardSessions sessions_;  // dashboard sign-ins
  StatsHistory history_;        // the dashboard's charts, sampled by the ticker
  LogStreams log_streams_;      // the dashboard's live log tails, pumped by the ticker
  BenchRuns bench_;             // the Bench page's run (on a RunBackground thread) and kept results

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::shared_ptr<GenerationRelay>> relays_;  // in flight; guarded by mu_
  bool stop_ticker_ = false;
  struct Background {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> cancel;
  };
  std::vector<Background> background_;  // guarded by mu_
  bool background_closed_ = false;      // guarded by mu_
  std::thread ticker_;
};

// Route handlers (routes_inference.cpp, routes_info.cpp).
void HandleInference(ApiServer& server, const HttpRequest& request,
                     const std::shared_ptr<ResponseWriter>& writer);
// routes_embeddings.cpp: /v1/embeddings and /api/embed; /v1/rerank, /v2/rerank, /rerank.
void HandleEmbeddings(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
void HandleRerank(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
// routes_inference.cpp: GET /v1/responses/{id}.
void HandleStoredResponse(ApiServer& server, const HttpRequest& request,
                          const std::shared_ptr<ResponseWriter>& writer);
void HandleModels(ApiServer& server, const HttpRequest& request,
                  const std::shared_ptr<ResponseWriter>& writer);
void HandleStatus(ApiServer& server, const HttpRequest& request,
                  const std::shared_ptr<ResponseWriter>& writer);
void HandleModelsStatus(ApiServer& server, const HttpRequest& request,
                        const std::shared_ptr<ResponseWriter>& writer);
void HandleAdmin(ApiServer& server, const HttpRequest& request,
                 const std::shared_ptr<ResponseWriter>& writer);
// routes_pull.cpp: POST /api/pull, /admin/api/models/pull.
void HandlePull(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
// routes_metrics.cpp: GET /metrics.
void HandleMetrics(ApiServer& server, const HttpRequest& request,
                   const std::shared_ptr<ResponseWriter>& writer);
// routes_ollama.cpp: Ollama's model routes.
void HandleOllama(ApiServer& server, const HttpRequest& request,
                  const std::shared_ptr<ResponseWriter>& writer);
// routes_dashboard.cpp: the web dashboard's page, files and sign-in.
void HandleDashboard(ApiServer& server, const HttpRequest& request,
                     const std::shared_ptr<ResponseWriter>& writer);
// routes_history.cpp: GET /admin/api/history, and the readings it is made of.
void HandleHistory(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
StatsReading ReadStats(ApiServer& server);
// routes_bench.cpp: /admin/api/bench and /admin/api/bench/{id}.
void HandleBench(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer);
// routes_cache.cpp: GET /admin/api/cache, POST /admin/api/cache/clear-hot|clear-ssd.
void HandleCache(ApiServer& server, const HttpRequest& request,
                 const std::shared_ptr<ResponseWriter>& writer);

}  // namespace llmhost::server
