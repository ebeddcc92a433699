#include "engine/mask_worker.h"

#include <utility>

namespace llmhost {

MaskWorker::~MaskWorker() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MaskWorker::Start(std::vector<ConstraintTracker*> jobs) {
  if (jobs.empty()) return;
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  {
    std::lock_guard<std::mutex> lk(mu_);
    jobs_ = std::move(jobs);
    busy_ = true;
  }
  cv_.notify_all();
}

void MaskWorker::Wait() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [this] { return !busy_; });
}

void MaskWorker::Run() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [this] { return stop_ || busy_; });
    if (stop_) return;
    std::vector<ConstraintTracker*> jobs = std::move(jobs_);
    jobs_.clear();
    lk.unlock();
    for (ConstraintTracker* t : jobs) t->PrepareMask();
    lk.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace llmhost
