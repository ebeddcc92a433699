#include "server/bench_runs.h"

#include <cstdio>
#include <random>

namespace llmhost::server {

namespace {

// "bench-" and 12 random hex digits.
std::string NewRunId() {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  char buf[32];
  std::snprintf(buf, sizeof buf, "bench-%012llx", static_cast<unsigned long long>(rng() & 0xffffffffffffULL));
  return buf;
}

}  // namespace

std::optional<std::string> BenchRuns::TryBegin(const BenchRequest& request, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return std::nullopt;
  failed_.reset();
  running_ = Run{NewRunId(), request.model, request.params, now, BenchProgress{"waiting for the model", 0, 0}};
  return running_->id;
}

void BenchRuns::Progress(const BenchProgress& progress) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) running_->progress = progress;
}

Status BenchRuns::Finish(const Result<BenchResult>& result) {
  std::optional<Run> run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    run = std::move(running_);
    running_.reset();
    if (run && !result.ok()) {
      failed_ = OJson{{"id", run->id}, {"model", run->model}, {"error", result.status().message()}};
    }
  }
  if (!run || !result.ok()) return Status::OK();
  return store_.Add(OJson{{"id", run->id},
                          {"model", run->model},
                          {"created", run->started},
                          {"params", BenchParamsJson(run->params)},
                          {"result", BenchResultJson(*result)}});
}

OJson BenchRuns::RunningJson() const {
  if (!running_) return nullptr;
  const Run& r = *running_;
  return OJson{{"id", r.id},
               {"model", r.model},
               {"params", BenchParamsJson(r.params)},
               {"started", r.started},
               {"phase", r.progress.phase},
               {"step", r.progress.step},
               {"steps", r.progress.steps}};
}

OJson BenchRuns::StateJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  return OJson{{"running", RunningJson()}, {"failed", failed_ ? *failed_ : OJson(nullptr)}};
}

std::optional<OJson> BenchRuns::RunJson(const std::string& id) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ && running_->id == id) {
      OJson j = {{"status", "running"}};
      const OJson run = RunningJson();  // (a temporary's items() would dangle)
      for (auto& [k, v] : run.items()) j[k] = v;
      return j;
    }
    if (failed_ && (*failed_)["id"] == id) {
      OJson j = {{"status", "failed"}};
      for (auto& [k, v] : failed_->items()) j[k] = v;
      return j;
    }
  }
  std::optional<OJson> kept = store_.Get(id);
  if (!kept) return std::nullopt;
  OJson j = {{"status", "done"}};
  for (auto& [k, v] : kept->items()) j[k] = v;
  return j;
}

}  // namespace llmhost::server
