#include "util/thread_pool.h"

#include <algorithm>
#include <cstdlib>

namespace llmhost {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i + 1 < n_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool& ThreadPool::Default() {
  static ThreadPool* pool = [] {
    int n = 0;
    if (const char* env = std::getenv("LLMHOST_THREADS")) n = std::atoi(env);
    return new ThreadPool(n);  // never destroyed: workers may outlive static destructors
  }();
  return *pool;
}

// Takes chunks until none are left. Called by workers and the caller alike.
void ThreadPool::RunChunks() {
  for (;;) {
    int64_t begin;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= n_) return;
      begin = next_;
      next_ += chunk_;
    }
    (*fn_)(begin, std::min(n_, begin + chunk_));
  }
}

void ThreadPool::WorkerLoop(int) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    RunChunks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  // Few chunks per thread: enough to balance, few enough to keep overhead low.
  int64_t chunk = std::max(grain, (n + size() * 4 - 1) / (size() * 4));
  if (workers_.empty() || n <= chunk) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    chunk_ = chunk;
    next_ = 0;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  RunChunks();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  fn_ = nullptr;
}

}  // namespace llmhost
