#include "kv/block_saver.h"

#include <utility>

namespace llmhost {

BlockSaver::BlockSaver(const KvCache* cache, std::shared_ptr<BlockStore> store, std::function<void()> on_done)
    : cache_(cache), store_(std::move(store)), on_done_(std::move(on_done)) {
  thread_ = std::thread([this] { Loop(); });
}

BlockSaver::~BlockSaver() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_one();
  thread_.join();
}

bool BlockSaver::Submit(int32_t id, const BlockMeta& meta) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_ >= kMaxInFlight) return false;
    queue_.push_back({id, meta});
    ++in_flight_;
    ++saving_;
  }
  work_cv_.notify_one();
  return true;
}

std::vector<BlockSaver::Done> BlockSaver::TakeDone() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Done> out;
  out.swap(done_);
  in_flight_ -= out.size();
  return out;
}

size_t BlockSaver::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

void BlockSaver::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return saving_ == 0; });
}

void BlockSaver::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and everything saved
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::vector<uint8_t> data(cache_->block_bytes());
    if (cache_->ReadBlock(job.id, data.data()).ok()) store_->Save(job.meta, std::move(data));  // else: a failed device's bytes
    lock.lock();
    done_.push_back({job.id, job.meta.key});
    --saving_;
    done_cv_.notify_all();
    if (on_done_) {
      lock.unlock();  // the hook takes the engine's lock
      on_done_();
      lock.lock();
    }
  }
}

}  // namespace llmhost
