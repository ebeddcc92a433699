#include "util/thread_team.h"

#include <utility>

namespace llmhost {

ThreadTeam::ThreadTeam(int size) {
  for (int r = 0; r < size; ++r) threads_.emplace_back([this, r] { Loop(r); });
}

ThreadTeam::~ThreadTeam() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadTeam::Run(const std::function<void(int rank)>& fn) {
  std::unique_lock<std::mutex> lock(mu_);
  fn_ = &fn;
  running_ = size();
  ++round_;
  start_.notify_all();
  done_.wait(lock, [&] { return running_ == 0; });
  fn_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadTeam::Loop(int rank) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || round_ != seen; });
      if (stop_) return;
      seen = round_;
      fn = fn_;
    }
    std::exception_ptr e;
    try {
      (*fn)(rank);
    } catch (...) {
      e = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (e && !error_) error_ = e;
    if (--running_ == 0) done_.notify_one();
  }
}

}  // namespace llmhost
