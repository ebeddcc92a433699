// The dashboard's Bench page (engine/bench_run.h's measurements, run in the
// server straight into a model's Engine):
//   GET    /admin/api/bench        {"running", "failed", "results": [newest first]}
//   POST   /admin/api/bench        starts a run (server/bench_request.h's body): 202 {id, status: "running"};
//                                  400 a bad body, 404 an unknown model, 409 while a run is going
//   GET    /admin/api/bench/{id}   one run: running (phase, step of steps), done (its record) or failed
//   DELETE /admin/api/bench/{id}   forgets a kept result
// The run happens on a thread of ApiServer::RunBackground: it leases the model
// from the pool (loading it when needed; the lease keeps it from eviction),
// measures, and stores the result (BenchRuns). The server stopping cancels it.
#include <chrono>
#include <future>
#include <memory>

#include <nlohmann/json.hpp>

#include "engine/engine_bench_stream.h"
#include "server/api_server.h"
#include "server/bench_request.h"
#include "server/dashboard_access.h"
#include "server/model_kind_check.h"
#include "server/pool_errors.h"
#include "server/pool_json.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

void SendError(const std::shared_ptr<ResponseWriter>& writer, const ApiError& e) {
  writer->Send(ErrorResponse(e, ApiFlavor::kOpenAI));
}

// A lease of `model`, waiting as long as the pool lets a request wait, but
// given up (kCancelled) as soon as `cancel` is set: a server shutting down
// does not wait for a load or for memory on a run's behalf.
AcquireResult AcquireUnlessCancelled(EnginePool& pool, const std::string& model, const std::atomic<bool>& cancel) {
  auto promise = std::make_shared<std::promise<AcquireResult>>();
  std::future<AcquireResult> f = promise->get_future();
  const uint64_t ticket = pool.AcquireAsync(model, [promise](AcquireResult r) { promise->set_value(std::move(r)); });
  while (f.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    if (cancel.load()) {
      pool.CancelAcquire(ticket);  // `done` runs now with kCancelled, unless it already ran
      break;
    }
  }
  return f.get();
}

// The run thread's body: lease, measure, keep.
void RunOne(ApiServer* server, std::string id, BenchRequest request, std::shared_ptr<std::atomic<bool>> cancel) {
  BenchRuns& runs = server->bench();
  auto finish = [&](const Result<BenchResult>& r) {
    if (r.ok()) {
      LOG_INFO("bench: " << id << " (" << request.model << ") done");
    } else {
      LOG_WARN("bench: " << id << " (" << request.model << "): " << r.status().message());
    }
    Status kept = runs.Finish(r);
    if (!kept.ok()) LOG_WARN("bench: the result is kept in memory only: " << kept.message());
  };
  runs.Progress(BenchProgress{"loading the model", 0, 0});
  AcquireResult lease = AcquireUnlessCancelled(server->pool(), request.model, *cancel);
  if (!lease.ok()) return finish(Status::Internal("the model: " + lease.error.message));
  const std::shared_ptr<ServedModel>& served = lease.lease->served();
  if (!served) return finish(Status::Internal("the model has no engine to measure"));
  if (!served->engine) {
    return finish(Status::InvalidArgument("the model is an embedding or rerank model: Bench measures chat models"));
  }
  const BenchStreamFn stream = EngineBenchStream(served->engine.get(), served->tokenizer.get(), cancel.get());
  finish(RunBench(request.params, stream, [&runs](const BenchProgress& p) { runs.Progress(p); }, cancel.get()));
}

void Start(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  OJson body;
  if (MaybeError e = ParseJsonObject(request.body, &body)) return SendError(writer, *e);
  BenchRequest bench;
  if (MaybeError e = ParseBenchRequest(body, &bench)) return SendError(writer, *e);
  Result<std::string> id = server.pool().Resolve(bench.model);
  if (!id.ok()) return SendError(writer, ErrorWithStatus(404, id.status().message(), "model_not_found"));
  bench.model = *id;
  if (MaybeError e = CheckKindBeforeLoad(server.pool(), *id, ModelKind::kChat)) return SendError(writer, *e);
  std::optional<std::string> run = server.bench().TryBegin(bench, UnixNow());
  if (!run) {
    // (The run may have ended since: then it is named as "").
    const OJson going = server.bench().StateJson()["running"];
    auto field = [&](const char* name) { return going.is_object() ? going.value(name, "") : std::string(); };
    return SendError(writer, ErrorWithStatus(409, "a bench run is going (" + field("id") + " on " + field("model") +
                                                      "): one at a time; wait for it to end",
                                             "bench_busy"));
  }
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  ApiServer* srv = &server;
  if (!server.RunBackground(cancel, [srv, id = *run, bench, cancel] { RunOne(srv, id, bench, cancel); })) {
    server.bench().Finish(Status::ResourceExhausted("the server is stopping"));
    return SendError(writer, ErrorWithStatus(503, "the server is stopping"));
  }
  LOG_INFO("bench: " << *run << " started on " << bench.model);
  SendJson(writer, OJson{{"id", *run}, {"status", "running"}, {"model", bench.model},
                         {"params", BenchParamsJson(bench.params)}},
           202);
}

}  // namespace

void HandleBench(ApiServer& server, const HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
  const std::string base = "/admin/api/bench";
  BenchRuns& runs = server.bench();
  if (request.path == base) {
    if (request.method == "POST") return Start(server, request, writer);
    OJson state = runs.StateJson();
    state["results"] = runs.store().List();
    return SendJson(writer, state);
  }
  const std::string id = request.path.substr(base.size() + 1);
  if (request.method == "GET") {
    std::optional<OJson> run = runs.RunJson(id);
    if (!run) return SendError(writer, ErrorWithStatus(404, "no bench run or result '" + id + "'"));
    return SendJson(writer, *run);
  }
  Result<bool> removed = runs.store().Remove(id);
  if (!removed.ok()) return SendError(writer, ErrorWithStatus(500, removed.status().message()));
  if (!*removed) return SendError(writer, ErrorWithStatus(404, "no kept bench result '" + id + "'"));
  LOG_INFO("bench: " << id << " deleted");
  SendJson(writer, OJson{{"deleted", id}});
}

}  // namespace llmhost::server
