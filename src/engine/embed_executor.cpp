#include "engine/embed_executor.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace llmhost {

// One request's inputs and where its results go. `next` is touched under
// mu_; the results by the executor's thread only.
struct EmbedExecutor::Job {
  bool score = false;
  std::vector<EmbeddingInput> inputs;
  size_t next = 0;  // the first input not yet taken into a batch
  size_t done = 0;  // inputs whose results are in
  std::atomic<bool> failed{false};  // read by TakeBatch under mu_, set by the thread or Stop
  std::vector<std::vector<float>> vectors;
  std::vector<float> scores;
  VectorsDone on_vectors;
  ScoresDone on_scores;

  // Each job answers once: Fail (a no-op when it failed already) or Finish.
  // `active` drops before the caller hears, so that it sees the job gone.
  void Fail(const Status& s, std::atomic<int64_t>& active) {
    if (failed.exchange(true)) return;
    active.fetch_sub(1);
    if (score) {
      on_scores(s);
    } else {
      on_vectors(s);
    }
  }
  void Finish(std::atomic<int64_t>& active) {
    active.fetch_sub(1);
    if (score) {
      on_scores(std::move(scores));
    } else {
      on_vectors(std::move(vectors));
    }
  }
};

EmbedExecutor::EmbedExecutor(EmbeddingModel* model, EmbedExecutorOptions options)
    : model_(model), options_(options) {
  if (options_.max_batch_tokens < 1) options_.max_batch_tokens = 1;
  thread_ = std::thread([this] { Run(); });
}

EmbedExecutor::~EmbedExecutor() { Stop(); }

void EmbedExecutor::Embed(std::vector<EmbeddingInput> inputs, VectorsDone done) {
  auto job = std::make_shared<Job>();
  job->inputs = std::move(inputs);
  job->vectors.resize(job->inputs.size());
  job->on_vectors = std::move(done);
  Submit(std::move(job));
}

void EmbedExecutor::Score(std::vector<EmbeddingInput> inputs, ScoresDone done) {
  auto job = std::make_shared<Job>();
  job->score = true;
  job->inputs = std::move(inputs);
  job->scores.resize(job->inputs.size());
  job->on_scores = std::move(done);
  Submit(std::move(job));
}

std::future<Result<std::vector<std::vector<float>>>> EmbedExecutor::Embed(std::vector<EmbeddingInput> inputs) {
  auto promise = std::make_shared<std::promise<Result<std::vector<std::vector<float>>>>>();
  auto f = promise->get_future();
  Embed(std::move(inputs), [promise](Result<std::vector<std::vector<float>>> r) { promise->set_value(std::move(r)); });
  return f;
}

std::future<Result<std::vector<float>>> EmbedExecutor::Score(std::vector<EmbeddingInput> inputs) {
  auto promise = std::make_shared<std::promise<Result<std::vector<float>>>>();
  auto f = promise->get_future();
  Score(std::move(inputs), [promise](Result<std::vector<float>> r) { promise->set_value(std::move(r)); });
  return f;
}

void EmbedExecutor::Submit(JobPtr job) {
  active_.fetch_add(1);
  if (job->inputs.empty()) {
    job->Finish(active_);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(job));
      cv_.notify_one();
      return;
    }
  }
  job->Fail(Status::ResourceExhausted("the model was unloaded"), active_);
}

void EmbedExecutor::Stop() {
  // Once: a second caller waits for the first's join.
  std::call_once(stop_once_, [this] {
    std::deque<JobPtr> waiting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      waiting.swap(queue_);
      cv_.notify_all();
    }
    // Failed at once, not after the running call; a job partly in that call
    // is failed too (its other inputs will never run).
    for (const JobPtr& job : waiting) job->Fail(Status::ResourceExhausted("the model was unloaded"), active_);
    thread_.join();
  });
}

int64_t EmbedExecutor::active_jobs() const { return active_.load(); }

std::vector<EmbedExecutor::Slice> EmbedExecutor::TakeBatch() {
  std::vector<Slice> batch;
  int64_t tokens = 0;
  while (!queue_.empty() && queue_.front()->failed) queue_.pop_front();  // an earlier batch failed it
  if (queue_.empty()) return batch;
  const bool score = queue_.front()->score;
  while (!queue_.empty() && queue_.front()->score == score) {
    Job& job = *queue_.front();
    const size_t begin = job.next;
    while (job.next < job.inputs.size()) {
      const int64_t g = std::max<int64_t>(1, options_.token_granularity);
      const int64_t n = (static_cast<int64_t>(job.inputs[job.next].ids.size()) + g - 1) / g * g;
      if (tokens > 0 && tokens + n > options_.max_batch_tokens) break;
      tokens += n;
      ++job.next;
    }
    if (job.next > begin) batch.push_back({queue_.front(), begin, job.next});
    if (job.next < job.inputs.size()) break;  // the budget is spent: the rest waits at the front
    queue_.pop_front();
  }
  return batch;
}

void EmbedExecutor::RunBatch(const std::vector<Slice>& batch) {
  std::vector<EmbeddingInput> inputs;
  for (const Slice& s : batch) {
    for (size_t i = s.begin; i < s.end; ++i) inputs.push_back(std::move(s.job->inputs[i]));
  }
  const bool score = batch.front().job->score;
  Status status = Status::OK();
  std::vector<std::vector<float>> vectors;
  std::vector<float> scores;
  if (score) {
    Result<std::vector<float>> r = model_->Score(inputs);
    if (r.ok()) scores = std::move(*r);
    status = r.ok() && scores.size() != inputs.size() ? Status::Internal("the model scored the wrong count")
                                                      : r.status();
  } else {
    Result<std::vector<std::vector<float>>> r = model_->Embed(inputs);
    if (r.ok()) vectors = std::move(*r);
    status = r.ok() && vectors.size() != inputs.size() ? Status::Internal("the model embedded the wrong count")
                                                       : r.status();
  }
  size_t at = 0;
  for (const Slice& s : batch) {
    Job& job = *s.job;
    for (size_t i = s.begin; i < s.end && status.ok(); ++i, ++at) {
      if (score) {
        job.scores[i] = scores[at];
      } else {
        job.vectors[i] = std::move(vectors[at]);
      }
    }
    job.done += s.end - s.begin;
    if (!status.ok()) {
      job.Fail(status, active_);
    } else if (job.done == job.inputs.size() && !job.failed) {
      job.Finish(active_);
    }
  }
}

void EmbedExecutor::Run() {
  for (;;) {
    std::vector<Slice> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      batch = TakeBatch();
    }
    if (!batch.empty()) RunBatch(batch);
  }
}

}  // namespace llmhost
