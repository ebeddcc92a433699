// The CPU stand-in for NCCL: ranks are threads of this process, buffers are
// host memory, and a call returns when every rank's buffer holds the sum.
#include <condition_variable>
#include <mutex>

#include "backend/collective.h"

namespace llmhost {

namespace {

// What the ranks of one group share: a generation-counted barrier and the
// buffers of the call in progress.
struct Group {
  explicit Group(int n) : size(n), bufs(static_cast<size_t>(n)) {}
  const int size;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  std::vector<float*> bufs;
  std::vector<float> sum;

  void Barrier() {
    std::unique_lock<std::mutex> lock(mu);
    const uint64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen; });
  }
};

class InProcessCollective final : public Collective {
 public:
  InProcessCollective(std::shared_ptr<Group> g, int rank) : g_(std::move(g)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_->size; }

  void AllReduceSum(float* buf, int64_t count) override {
    Group& g = *g_;
    if (g.size == 1 || count <= 0) return;
    const size_t n = static_cast<size_t>(count);
    {
      std::lock_guard<std::mutex> lock(g.mu);
      g.bufs[static_cast<size_t>(rank_)] = buf;
      if (g.sum.size() < n) g.sum.resize(n);
    }
    g.Barrier();  // every buffer posted, the sum sized
    // Each rank adds up its share of the elements, in rank order.
    const size_t begin = n * static_cast<size_t>(rank_) / static_cast<size_t>(g.size);
    const size_t end = n * static_cast<size_t>(rank_ + 1) / static_cast<size_t>(g.size);
    for (size_t i = begin; i < end; ++i) {
      float s = g.bufs[0][i];
      for (int r = 1; r < g.size; ++r) s += g.bufs[static_cast<size_t>(r)][i];
      g.sum[i] = s;
    }
    g.Barrier();  // the sum complete; nobody writes a buffer before this
    for (size_t i = 0; i < n; ++i) buf[i] = g.sum[i];
    g.Barrier();  // every copy taken: the next call may reuse the sum
  }

 private:
  std::shared_ptr<Group> g_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Collective>> MakeInProcessCollectives(int size) {
  auto g = std::make_shared<Group>(size);
  std::vector<std::unique_ptr<Collective>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<InProcessCollective>(g, r));
  return out;
}

}  // namespace llmhost
