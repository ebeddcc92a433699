#include "util/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace llmhost {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i + 1 < n_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
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

namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or `micros` have passed; true when done() held.
template <typename Done>
bool SpinUntil(Done done, int micros) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  for (int i = 0;; ++i) {
    if (done()) return true;
    CpuRelax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return done();
  }
}

}  // namespace

// Takes chunks of job `gen` until none are left; returns at once when
// another job is current (a worker that woke late). A chunk is claimed by
// one compare-and-swap on claim_, so fn_, n_ and chunk_ are those of `gen`
// for as long as the claimed chunk runs: the caller waits for it.
void ThreadPool::RunChunks(uint32_t gen) {
  for (;;) {
    uint64_t w = claim_.load(std::memory_order_acquire);
    uint64_t total;
    for (;;) {
      total = (w >> 16) & 0xffff;
      if ((w >> 32) != gen || (w & 0xffff) >= total) return;
      if (claim_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) break;
    }
    const int64_t begin = static_cast<int64_t>(w & 0xffff) * chunk_;
    (*fn_)(begin, std::min(n_, begin + chunk_));
    if (done_chunks_.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<int64_t>(total)) {
      std::lock_guard<std::mutex> lock(mu_);  // the caller may be about to wait
      done_.notify_one();
    }
  }
}

void ThreadPool::WorkerLoop(int) {
  uint64_t seen = 0;
  for (;;) {
    auto ready = [&] {
      return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!SpinUntil(ready, kSpinMicros)) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    RunChunks(static_cast<uint32_t>(seen));
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  // Few chunks per thread: enough to balance, few enough to keep overhead low.
  int64_t chunk = std::max(grain, (n + size() * 4 - 1) / (size() * 4));
  chunk = std::max(chunk, (n + kMaxChunks - 1) / kMaxChunks);  // the chunk count fits claim_
  if (workers_.empty() || n <= chunk) {
    fn(0, n);
    return;
  }
  const int64_t chunks = (n + chunk - 1) / chunk;
  std::lock_guard<std::mutex> call(call_mu_);
  fn_ = &fn;
  n_ = n;
  chunk_ = chunk;
  done_chunks_.store(0, std::memory_order_relaxed);
  const uint32_t gen = static_cast<uint32_t>(generation_.load(std::memory_order_relaxed) + 1);
  claim_.store((static_cast<uint64_t>(gen) << 32) | (static_cast<uint64_t>(chunks) << 16),
               std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);  // a worker deciding to sleep sees the bump or gets the notify
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  RunChunks(gen);
  // Done when every chunk is: a worker that has not woken yet (preempted by
  // another thread) does not hold the job up.
  auto finished = [&] { return done_chunks_.load(std::memory_order_acquire) == chunks; };
  if (!SpinUntil(finished, kSpinMicros)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, finished);
  }
  fn_ = nullptr;
}

}  // namespace llmhost
