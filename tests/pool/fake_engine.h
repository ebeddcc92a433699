// Test doubles for the engine pool: an EngineFactory whose engines have the
// sizes, activity and failures a test chooses, and model directories on disk
// (config.json + a tiny weight file) so that discovery finds them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pool/engine_pool.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::testing {

inline constexpr uint64_t kGB = uint64_t{1} << 30;

// Live state of one fake engine, shared with the test.
struct FakeEngineState {
  std::atomic<uint64_t> device_active{0};
  std::atomic<int64_t> active{0};
  std::atomic<bool> stopped{false};
  std::atomic<int> caches_released{0};
  std::shared_ptr<KvBudget> kv_budget;  // what the pool handed the engine
  int cuda_device = -1;                 // the GPU the pool loaded it on (-1: the host)
};

class FakeEngine final : public LoadedEngine {
 public:
  FakeEngine(std::shared_ptr<FakeEngineState> s, PrefillDims dims) : s_(std::move(s)), dims_(dims) {}
  BudgetBytes DeviceActiveBytes() const override {
    BudgetBytes out{};
    out[BudgetIndex(dims_.budget)] = s_->stopped ? 0 : s_->device_active.load();
    return out;
  }
  int64_t ActiveRequests() const override { return s_->stopped ? 0 : s_->active.load(); }
  void Stop() override { s_->stopped = true; }
  void ReleaseCaches() override { s_->caches_released++; }
  int64_t context_length() const override { return 4096; }
  PrefillDims prefill_dims() const override { return dims_; }

 private:
  std::shared_ptr<FakeEngineState> s_;
  PrefillDims dims_;
};

struct FakeModelSpec {
  uint64_t resident = kGB;        // the admission size
  uint64_t device_active = 0;     // what its "allocator" reports once loaded
  bool fail = false;              // Load fails
  bool on_gpu = false;            // priced and held in the GPU's budget (dims.budget follows;
                                  // a model's `device` setting overrides it, as the real factory's)
  PrefillDims dims;
  std::function<void()> during_load;  // runs inside Load (block, trigger things)
};

inline FakeModelSpec Spec(uint64_t resident) {
  FakeModelSpec s;
  s.resident = resident;
  return s;
}

class FakeFactory final : public EngineFactory {
 public:
  // Shared with the test after the pool takes the factory.
  struct Shared {
    std::mutex mu;
    std::map<std::string, FakeModelSpec> specs;
    std::map<std::string, std::vector<std::shared_ptr<FakeEngineState>>> engines;  // by load
    std::vector<std::string> loads;  // ids in load order
    std::shared_ptr<FakeEngineState> Last(const std::string& id) {
      std::lock_guard<std::mutex> lock(mu);
      auto& v = engines[id];
      return v.empty() ? nullptr : v.back();
    }
    std::vector<std::string> Loads() {
      std::lock_guard<std::mutex> lock(mu);
      return loads;
    }
    void Set(const std::string& id, FakeModelSpec s) {
      std::lock_guard<std::mutex> lock(mu);
      specs[id] = std::move(s);
    }
  };

  explicit FakeFactory(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  static bool OnGpu(const FakeModelSpec& spec, const ModelSettings& settings) {
    return settings.device ? *settings.device != "cpu" : spec.on_gpu;
  }

  BudgetBytes ResidentEstimate(const DiscoveredModel& m, const ModelSettings& settings) override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    auto it = shared_->specs.find(m.id);
    const FakeModelSpec spec = it == shared_->specs.end() ? Spec(kGB) : it->second;
    BudgetBytes b{};
    const int64_t tp = settings.tensor_parallel.value_or(1);
    if (OnGpu(spec, settings) && tp > 1) {  // as the real factory: a share on each of the first tp GPUs
      for (int64_t r = 0; r < tp && r < kMaxGpus; ++r) b[BudgetIndex(GpuBudget(static_cast<int>(r)))] = spec.resident / tp;
      return b;
    }
    b[BudgetIndex(OnGpu(spec, settings) ? Budget::kDevice : Budget::kHost)] = spec.resident;
    return b;
  }

  Result<std::unique_ptr<LoadedEngine>> Load(const DiscoveredModel& m, const ModelSettings& settings,
                                             const std::atomic<bool>&, std::shared_ptr<KvBudget> budget,
                                             int cuda_device) override {
    FakeModelSpec spec;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      spec = shared_->specs[m.id];
      shared_->loads.push_back(m.id);
    }
    if (spec.during_load) spec.during_load();
    if (spec.fail) return Status::Corruption("model.safetensors: bad header (fake)");
    auto state = std::make_shared<FakeEngineState>();
    state->device_active = spec.device_active;
    state->kv_budget = std::move(budget);
    state->cuda_device = cuda_device;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->engines[m.id].push_back(state);
    }
    if (OnGpu(spec, settings)) spec.dims.budget = Budget::kDevice;
    return std::unique_ptr<LoadedEngine>(new FakeEngine(state, spec.dims));
  }

 private:
  std::shared_ptr<Shared> shared_;
};

// Waits (up to 20 s) for `pred`; false when it never held. For events that
// happen on the pool's threads; not a timing assertion.
inline bool WaitFor(const std::function<bool()>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// A latch a fake load can block on.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false, entered = false;
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  void WaitEntered() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

// A directory of model folders: each with config.json and a 16-byte weight file.
inline std::string MakeModelDirs(const std::vector<std::string>& ids) {
  const std::string root = MakeTempDir();
  for (const std::string& id : ids) {
    const std::string dir = root + "/" + id;
    std::filesystem::create_directories(dir);
    (void)WriteFileAtomic(dir + "/config.json", R"({"model_type":"llama","max_position_embeddings":4096})");
    (void)WriteFileAtomic(dir + "/model.safetensors", "0123456789abcdef");
  }
  return root;
}

// A pool over fake engines, a fake probe and a settable clock.
struct PoolFixture {
  std::shared_ptr<FakeFactory::Shared> factory = std::make_shared<FakeFactory::Shared>();
  std::shared_ptr<FakeMemoryProbe> probe = std::make_shared<FakeMemoryProbe>();
  std::shared_ptr<std::atomic<double>> now = std::make_shared<std::atomic<double>>(1'000'000.0);
  std::shared_ptr<std::atomic<int>> sleeps = std::make_shared<std::atomic<int>>(0);
  std::function<void()> on_sleep;  // runs at each settle-barrier sleep
  std::string root;
  PoolOptions options;
  std::unique_ptr<EnginePool> pool;

  // `total` of memory, all available; guard custom at `ceiling` (0: balanced).
  void SetMemory(uint64_t total, uint64_t available) {
    SystemMemory s;
    s.mem_total = total;
    s.mem_available = available;
    s.ok = true;
    probe->set_system(s);
  }

  void Start(const std::vector<std::string>& ids, uint64_t custom_ceiling = 10 * kGB) {
    root = MakeModelDirs(ids);
    options.model_dirs = {root};
    if (custom_ceiling > 0 && options.guard.tier == GuardTier::kBalanced) {
      options.guard.tier = GuardTier::kCustom;
      options.guard.custom_ceiling_bytes = custom_ceiling;
    }
    SetMemory(64 * kGB, 64 * kGB);
    PoolClock clock;
    auto n = now;
    clock.unix_now = [n] { return n->load(); };
    auto s = sleeps;
    clock.sleep = [this, s](double) {
      ++*s;
      if (on_sleep) on_sleep();
    };
    auto p = EnginePool::Create(options, std::make_unique<FakeFactory>(factory), probe, clock);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool = std::move(*p);
  }

  void Advance(double seconds) { now->store(now->load() + seconds); }

  ModelStatus StatusOf(const std::string& id) const {
    for (const auto& m : pool->ModelStatuses()) {
      if (m.id == id) return m;
    }
    return ModelStatus();
  }
  bool Loaded(const std::string& id) const { return StatusOf(id).loaded; }
  std::vector<std::string> LoadedIds() const {
    std::vector<std::string> out;
    for (const auto& m : pool->ModelStatuses()) {
      if (m.loaded) out.push_back(m.id);
    }
    return out;
  }
  // Acquires and releases at once (loads the model).
  PoolError Touch(const std::string& id, double timeout = 5) {
    AcquireResult r = pool->Acquire(id, timeout);
    return r.ok() ? PoolError() : r.error;
  }
};

}  // namespace llmhost::testing
