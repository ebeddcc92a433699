#include "server/api_server.h"

#include <algorithm>

#include "server/dashboard_access.h"
#include "server/status_recording_writer.h"
#include "util/file.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

enum class Route { kHealth, kModels, kModelsStatus, kInference, kEmbeddings, kRerank, kStoredResponse, kStatus, kAdmin,
                   kOllama, kMetrics, kPull, kBench, kDashboard };

struct RouteEntry {
  const char* method;
  const char* path;  // exact; "/v1/models/" also matches ids below it
  Route route;
};

// The one route table.
constexpr RouteEntry kRoutes[] = {
    {"GET", "/health", Route::kHealth},
    {"GET", "/metrics", Route::kMetrics},
    {"GET", "/v1/models", Route::kModels},
    {"GET", "/v1/models/status", Route::kModelsStatus},
    {"GET", "/v1/models/", Route::kModels},    // /v1/models/{id}
    {"POST", "/v1/models/", Route::kAdmin},    // /v1/models/{id}/unload
    {"POST", "/v1/chat/completions", Route::kInference},
    {"POST", "/v1/completions", Route::kInference},
    {"POST", "/v1/messages", Route::kInference},
    {"POST", "/v1/messages/count_tokens", Route::kInference},
    {"POST", "/v1/responses", Route::kInference},
    {"GET", "/v1/responses/", Route::kStoredResponse},  // /v1/responses/{id}
    {"POST", "/v1/embeddings", Route::kEmbeddings},
    {"POST", "/v1/rerank", Route::kRerank},
    {"POST", "/v2/rerank", Route::kRerank},
    {"POST", "/rerank", Route::kRerank},
    {"POST", "/api/embed", Route::kEmbeddings},
    {"POST", "/api/embeddings", Route::kEmbeddings},
    {"GET", "/api/status", Route::kStatus},
    {"POST", "/admin/api/models/pull", Route::kPull},  // before /admin/api/models/{id}/...
    {"GET", "/admin/api/models", Route::kAdmin},
    {"GET", "/admin/api/models/", Route::kAdmin},
    {"POST", "/admin/api/models/", Route::kAdmin},
    {"PUT", "/admin/api/models/", Route::kAdmin},
    {"DELETE", "/admin/api/models/", Route::kAdmin},
    {"POST", "/admin/api/reload", Route::kAdmin},
    {"GET", "/admin/api/cache", Route::kAdmin},
    {"POST", "/admin/api/cache/", Route::kAdmin},  // clear-hot, clear-ssd
    {"GET", "/admin/api/status", Route::kStatus},
    {"GET", "/admin/api/history", Route::kAdmin},
    {"GET", "/admin/api/logs", Route::kAdmin},
    {"GET", "/admin/api/bench", Route::kBench},
    {"POST", "/admin/api/bench", Route::kBench},
    {"GET", "/admin/api/bench/", Route::kBench},     // /admin/api/bench/{id}
    {"DELETE", "/admin/api/bench/", Route::kBench},
    // Ollama's API (errors as {"error": "..."}: FlavorForPath).
    {"POST", "/api/chat", Route::kInference},
    {"POST", "/api/generate", Route::kInference},
    {"GET", "/api/version", Route::kOllama},
    {"GET", "/api/tags", Route::kOllama},
    {"GET", "/api/ps", Route::kOllama},
    {"POST", "/api/show", Route::kOllama},
    {"DELETE", "/api/delete", Route::kOllama},
    {"POST", "/api/pull", Route::kPull},
    // The dashboard (routes_dashboard.cpp); last, so /admin/api/... above wins.
    {"GET", "/admin", Route::kDashboard},
    {"GET", "/admin/", Route::kDashboard},  // its files, /admin/api/session
    {"POST", "/admin/login", Route::kDashboard},
    {"POST", "/admin/logout", Route::kDashboard},
};

bool PathMatches(const std::string& path, const char* pattern) {
  const std::string p = pattern;
  if (!p.empty() && p.back() == '/') return path.size() > p.size() && path.compare(0, p.size(), p) == 0;
  return path == p;
}

std::string NormalizePath(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

ApiServer::ApiServer(const ServeSettings& settings, EnginePool* pool, MemoryEnforcer* enforcer)
    : settings_(settings), pool_(pool), enforcer_(enforcer), auth_(settings.api_keys), cors_(settings.cors_origins),
      host_guard_(settings.host, auth_.open(), settings.allowed_hosts, &cors_),
      started_(std::chrono::steady_clock::now()), history_(settings.stats_interval),
      bench_(settings.home.empty() ? "" : JoinPath(settings.home, "bench.json")) {}

Result<std::unique_ptr<ApiServer>> ApiServer::Create(const ServeSettings& settings, EnginePool* pool,
                                                     MemoryEnforcer* enforcer, bool handle_signals,
                                                     TieredBlockStore* kv_store,
                                                     std::shared_ptr<const TlsServerContext> tls) {
  std::unique_ptr<ApiServer> s(new ApiServer(settings, pool, enforcer));
  s->kv_store_ = kv_store;
  if (Status kept = s->bench_.store().Load(); !kept.ok()) {
    LOG_WARN("bench: earlier results not read (" << kept.message() << "); new ones replace the file");
  }
  HttpServerOptions o;
  o.host = settings.host;
  o.port = settings.port;
  o.io_threads = settings.io_threads;
  o.max_body_bytes = settings.max_body_size;
  o.drain_timeout = std::chrono::seconds(settings.drain_timeout);
  o.max_connections = settings.max_connections;
  o.header_timeout = std::chrono::seconds(settings.header_timeout);
  o.handle_signals = handle_signals;
  o.tls = std::move(tls);
  ApiServer* self = s.get();
  auto handler = [self](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
    self->Handle(std::move(r), std::move(w));
  };
  auto errors = [](int status, const std::string& message, const std::string& target) {
    const std::string path = target.substr(0, target.find('?'));
    return ErrorResponse(ErrorWithStatus(status, message), FlavorForPath(path));
  };
  ASSIGN_OR_RETURN(s->http_, HttpServer::Create(o, handler, errors));
  return s;
}

ApiServer::~ApiServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ticker_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  CancelAllRelays();
  StopBackground();
}

bool ApiServer::RunBackground(std::shared_ptr<std::atomic<bool>> cancel, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (background_closed_) return false;
  background_.push_back({std::thread(std::move(fn)), std::move(cancel)});
  return true;
}

void ApiServer::StopBackground() {
  std::vector<Background> tasks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    background_closed_ = true;
    tasks.swap(background_);
  }
  for (Background& t : tasks) t.cancel->store(true);
  for (Background& t : tasks) t.thread.join();
}

int64_t ApiServer::uptime_s() const {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_)
      .count();
}

void ApiServer::Run() {
  history_.Record(ReadStats(*this));  // the charts' baseline: what comes later counts
  ticker_ = std::thread([this] { TickerLoop(); });
  http_->Run();
  CancelAllRelays();
  StopBackground();
}

void ApiServer::TickerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_ticker_) {
    cv_.wait_for(lock, std::chrono::seconds(1));
    if (stop_ticker_) break;
    // Tick outside mu_: a relay finishing takes mu_ (RemoveRelay) under its own lock.
    std::vector<std::shared_ptr<GenerationRelay>> live(relays_.begin(), relays_.end());
    lock.unlock();
    const auto now = std::chrono::steady_clock::now();
    for (auto& r : live) r->Tick(now);
    live.clear();
    if (history_.Due(std::chrono::duration<double>(now.time_since_epoch()).count())) history_.Record(ReadStats(*this));
    // Log tails end when the drain starts, so that they do not hold it up.
    if (http_->shutting_down()) {
      log_streams_.EndAll();
    } else {
      log_streams_.Pump();
    }
    lock.lock();
  }
}

// Requests still generating when the drain ended: cancel them, and wait
// (bounded) for their final events so no engine callback outlives the
// connections it writes to.
void ApiServer::CancelAllRelays() {
  std::vector<std::shared_ptr<GenerationRelay>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    live.assign(relays_.begin(), relays_.end());
  }
  if (live.empty()) return;
  LOG_INFO("http: cancelling " << live.size() << " requests still generating");
  for (auto& r : live) r->Cancel();
  live.clear();
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return relays_.empty(); })) {
    LOG_WARN("http: " << relays_.size() << " requests did not end after cancellation");
  }
}

void ApiServer::AddRelay(const std::shared_ptr<GenerationRelay>& relay) {
  std::lock_guard<std::mutex> lock(mu_);
  relays_.insert(relay);
}

void ApiServer::RemoveRelay(const GenerationRelay* relay) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = relays_.begin(); it != relays_.end(); ++it) {
      if (it->get() == relay) {
        relays_.erase(it);
        break;
      }
    }
  }
  cv_.notify_all();
}

size_t ApiServer::relay_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return relays_.size();
}

// A route's name in the metrics: its table path, "{id}" for what follows a
// trailing slash (so that ids do not multiply the series).
static std::string RouteLabel(const char* path) {
  std::string p = path;
  return !p.empty() && p.back() == '/' ? p + "{id}" : p;
}

void ApiServer::Handle(HttpRequest request, std::shared_ptr<ResponseWriter> raw_writer) {
  auto route_label = std::make_shared<std::string>("unmatched");
  auto writer = std::make_shared<StatusRecordingWriter>(
      std::move(raw_writer), [this, route_label](int status) { metrics_.CountResponse(*route_label, status); });
  const ApiFlavor flavor = FlavorForPath(request.path);
  if (request.method == "OPTIONS") {
    writer->Send(cors_.Preflight(request));
    return;
  }
  for (auto& [k, v] : cors_.ResponseHeaders(request)) writer->AddHeader(k, v);
  if (MaybeError e = host_guard_.Check(request)) {
    writer->Send(ErrorResponse(*e, flavor));
    return;
  }
  request.path = NormalizePath(request.path);
  const RouteEntry* match = nullptr;
  bool path_known = false;
  for (const RouteEntry& e : kRoutes) {
    if (!PathMatches(request.path, e.path)) continue;
    path_known = true;
    if (request.method == e.method || (request.method == "HEAD" && std::string(e.method) == "GET")) {
      match = &e;
      break;
    }
  }
  if (match) *route_label = RouteLabel(match->path);
  // HEAD is GET without the body (the transport leaves the body out), on
  // every GET route.
  if (match && request.method == "HEAD") request.method = "GET";
  if (match && match->route == Route::kHealth) {
    HttpResponse r;
    r.body = R"({"status":"ok"})";
    writer->Send(std::move(r));
    return;
  }
  // The dashboard's page, files and sign-in are open; it checks sessions itself.
  if (match && match->route == Route::kDashboard) return HandleDashboard(*this, request, writer);
  if (MaybeError e = CheckAccess(auth_, sessions_, request, UnixNow())) {
    HttpResponse r = ErrorResponse(*e, flavor);
    if (flavor == ApiFlavor::kOpenAI && e->status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
    writer->Send(std::move(r));
    return;
  }
  if (!match) {
    ApiError e = path_known ? ErrorWithStatus(405, "Method " + request.method + " is not allowed on " + request.path)
                            : ErrorWithStatus(404, "Unknown route: " + request.method + " " + request.path);
    writer->Send(ErrorResponse(e, flavor));
    return;
  }
  switch (match->route) {
    case Route::kModels: HandleModels(*this, request, writer); break;
    case Route::kInference: HandleInference(*this, request, writer); break;
    case Route::kEmbeddings: HandleEmbeddings(*this, request, writer); break;
    case Route::kRerank: HandleRerank(*this, request, writer); break;
    case Route::kStoredResponse: HandleStoredResponse(*this, request, writer); break;
    case Route::kStatus: HandleStatus(*this, request, writer); break;
    case Route::kModelsStatus: HandleModelsStatus(*this, request, writer); break;
    case Route::kAdmin: HandleAdmin(*this, request, writer); break;
    case Route::kOllama: HandleOllama(*this, request, writer); break;
    case Route::kMetrics: HandleMetrics(*this, request, writer); break;
    case Route::kPull: HandlePull(*this, request, writer); break;
    case Route::kBench: HandleBench(*this, request, writer); break;
    case Route::kHealth:
    case Route::kDashboard: break;
  }
}

}  // namespace llmhost::server
