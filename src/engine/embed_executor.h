// EmbedExecutor: the one thread that runs an EmbeddingModel. Requests hand
// it jobs (Embed or Score over token lists) from any thread; the thread
// gathers the inputs of every waiting job, in arrival order, into one
// EmbeddingModel call of at most max_batch_tokens tokens (a job's inputs may
// span several calls; an input larger than the budget goes alone), and
// calls each job's callback (or resolves its future) when its last input is
// done.
//
//   EmbedExecutor ex(model.get(), {});
//   auto f = ex.Embed(inputs);          // from a request thread
//   Result<std::vector<std::vector<float>>> v = f.get();
//
// An error of a call fails every job with an input in it. Stop() (and the
// destructor) fail the jobs still waiting and joins the thread.
//
// Thread safety: Embed, Score, Stop and active_jobs from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "model/embedding_model.h"
#include "util/status.h"

namespace llmhost {

struct EmbedExecutorOptions {
  int64_t max_batch_tokens = 8192;  // tokens per EmbeddingModel call (one input may exceed it alone)
  // An input costs its tokens rounded up to this (a decoder embedder's KV
  // block: each input takes whole blocks), so that a batch of many short
  // inputs stays inside the memory the pool priced for max_batch_tokens.
  int64_t token_granularity = 1;
};

class EmbedExecutor {
 public:
  // `model` must outlive the executor.
  EmbedExecutor(EmbeddingModel* model, EmbedExecutorOptions options);
  ~EmbedExecutor();
  EmbedExecutor(const EmbedExecutor&) = delete;
  EmbedExecutor& operator=(const EmbedExecutor&) = delete;

  using VectorsDone = std::function<void(Result<std::vector<std::vector<float>>>)>;
  using ScoresDone = std::function<void(Result<std::vector<float>>)>;
  // One vector per input (EmbeddingModel::Embed). `done` runs once, on the
  // executor's thread (or the caller's, for no inputs or a stopped executor).
  void Embed(std::vector<EmbeddingInput> inputs, VectorsDone done);
  // One score per input (EmbeddingModel::Score).
  void Score(std::vector<EmbeddingInput> inputs, ScoresDone done);
  // The same, as futures.
  std::future<Result<std::vector<std::vector<float>>>> Embed(std::vector<EmbeddingInput> inputs);
  std::future<Result<std::vector<float>>> Score(std::vector<EmbeddingInput> inputs);
  // Fails waiting jobs ("the model was unloaded"), lets the running call
  // finish, joins the thread. Idempotent; later jobs fail at once.
  void Stop();
  // Jobs queued or running.
  int64_t active_jobs() const;

 private:
  struct Job;
  using JobPtr = std::shared_ptr<Job>;
  void Submit(JobPtr job);
  void Run();
  // Takes the next batch off the queue (with mu_ held): inputs of jobs of one
  // kind, in order, up to the token budget.
  struct Slice {
    JobPtr job;
    size_t begin, end;  // the job's inputs [begin, end)
  };
  std::vector<Slice> TakeBatch();
  void RunBatch(const std::vector<Slice>& batch);

  EmbeddingModel* model_;
  EmbedExecutorOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<JobPtr> queue_;  // guarded by mu_; a job leaves once all its inputs are taken
  bool stopping_ = false;     // guarded by mu_
  std::atomic<int64_t> active_{0};  // jobs submitted and not yet resolved
  std::once_flag stop_once_;
  std::thread thread_;
};

}  // namespace llmhost
