// The Bench page's runs (POST /admin/api/bench, routes_bench.cpp): at most one
// at a time, its progress for polling, and the results kept (BenchStore).
// The run itself happens on a thread of ApiServer::RunBackground; this
// object only holds its state.
//
// A run's life: TryBegin (the slot taken, or 409) → Progress ... → Finish
// (a result goes to the store; an error is kept as the last failed run).
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/bench_run.h"
#include "server/bench_request.h"
#include "server/bench_store.h"

namespace llmhost::server {

class BenchRuns {
 public:
  // `file`: where results persist ("" : memory only).
  explicit BenchRuns(std::string file) : store_(std::move(file)) {}

  BenchStore& store() { return store_; }

  // Takes the run slot for `request` at `now` (unix seconds): the run's id,
  // or nullopt while another run holds it.
  std::optional<std::string> TryBegin(const BenchRequest& request, int64_t now);
  void Progress(const BenchProgress& progress);
  // Frees the slot: the result stored as {id, model, created, params,
  // result}, or the error kept as the last failed run. A store that cannot
  // write its file keeps the result in memory (the I/O error returned).
  Status Finish(const Result<BenchResult>& result);

  // {"running": {id, model, params, started, phase, step, steps} or null,
  //  "failed": {id, model, error} (the last run, when it failed) or null}
  OJson StateJson() const;
  // One run: the running one ({"status": "running", ...}), a kept result
  // ({"status": "done", ...record}), the last failed one ({"status":
  // "failed", ...}); nullopt for an unknown id.
  std::optional<OJson> RunJson(const std::string& id) const;

 private:
  struct Run {
    std::string id, model;
    BenchParams params;
    int64_t started = 0;
    BenchProgress progress;
  };
  OJson RunningJson() const;  // with mu_ held

  BenchStore store_;
  mutable std::mutex mu_;
  std::optional<Run> running_;  // guarded by mu_
  std::optional<OJson> failed_;  // guarded by mu_
};

}  // namespace llmhost::server
