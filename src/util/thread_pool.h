// ThreadPool: a fork-join pool for data-parallel kernels.
//
// ParallelFor splits [0, n) into contiguous chunks, runs them on the pool's
// workers plus the calling thread, and returns when all are done. Workers
// persist between calls (spawning threads per matmul would cost more than a
// small matmul). One ParallelFor at a time per pool: the compute executor owns
// its pool; calls from several threads are serialised.
//
// Hand-off: a decode step runs a few hundred short ParallelFors, so waking
// sleeping workers (a futex call and a scheduler round trip each) would cost
// a large part of it. Workers that finish a job spin on the job counter for
// up to kSpinMicros before they block, and the caller spins as long on the
// chunks' completion before it blocks; chunks are claimed with an atomic.
// A call ends when its chunks are done, not when every worker has checked
// in: a worker preempted by another thread (a restore, the HTTP threads)
// costs only the chunk it holds, never a wait for it to be scheduled again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace llmhost {

class ThreadPool {
 public:
  // n_threads includes the calling thread; 0 = hardware concurrency.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over disjoint chunks covering [0, n), each at least
  // `grain` long (except the last). fn must be safe to run concurrently.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // A process-wide pool sized to the machine (LLMHOST_THREADS overrides).
  static ThreadPool& Default();

 private:
  void WorkerLoop(int index);
  void RunChunks(uint32_t gen);

  static constexpr int kSpinMicros = 100;
  static constexpr int64_t kMaxChunks = 0xffff;

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serialises ParallelFor callers
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};  // bumped (under mu_) per ParallelFor call
  std::atomic<bool> stop_{false};
  // The current job (written before generation_ is bumped, valid while a
  // ParallelFor runs).
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 0;
  // [job generation (low 32 bits of generation_): 32][chunks: 16][next chunk: 16]
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_chunks_{0};  // chunks of the current job finished
};

}  // namespace llmhost
