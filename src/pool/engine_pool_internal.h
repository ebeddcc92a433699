// The engine pool's private state, shared by engine_pool.cpp,
// pool_admission.cpp and pool_admin.cpp. Not for other layers.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

#include "pool/engine_pool.h"

namespace llmhost {

enum class SlotState { kUnloaded, kLoading, kLoaded, kUnloading };
const char* SlotStateName(SlotState s);

// One discovered model. Guarded by EnginePool::mu_, but for abort_loading.
struct EnginePool::Slot {
  DiscoveredModel model;
  ModelSettings settings;
  BudgetBytes estimate{};  // the factory's resident estimate for these settings (a GPU's bytes at kDevice)
  int planned_gpu = -1;    // the GPU an eviction for its admission made room on
  SlotState state = SlotState::kUnloaded;
  std::shared_ptr<LoadedEngine> engine;  // loaded (and while unloading, until stopped)
  BudgetBytes resident{};  // the admission size, in committed_ while loading / loaded / unloading
  BudgetBytes measured{};  // live growth seen across the load
  uint64_t kv_claimed = 0; // bytes its KV cache claimed beyond the estimate (in resident[kv_budget()])
  uint64_t kv_wanted = 0;  // a denied claim the manager should make room for
  Budget kv_wanted_in = Budget::kHost;  // in which budget (a split model's may be any of its GPUs)
  int64_t in_use = 0;      // leases
  std::vector<std::shared_ptr<ModelLease::AbortBlock>> leases;
  bool pending_unload = false;  // unload once drained (manual unload of a busy model)
  bool reload_pending = false;  // runtime settings changed: reload once drained
  std::string runtime_key;      // settings the engine was built with
  std::optional<PoolError> load_failure;  // cached until Rediscover()
  double last_access = 0;       // unix seconds; 0: never
  // A request's keep-alive for this load (Ollama's keep_alive), over the
  // settings' TTL until the model unloads; negative: no expiry.
  std::optional<double> keep_alive_s;
  double loaded_at = 0;
  std::atomic<bool> abort_loading{false};

  bool pinned() const { return settings.pinned && !pending_unload; }
  bool on_gpu() const { return estimate[BudgetIndex(Budget::kDevice)] > 0; }
  // GPUs a split model (tensor parallelism) is priced on: N (a run the pool places), each
  // a share; 1 otherwise.
  int gpu_span() const {
    int n = 0;
    for (int g = 0; g < kMaxGpus; ++g) n += estimate[BudgetIndex(GpuBudget(g))] > 0;
    return std::max(n, 1);
  }
  Budget home = Budget::kHost;  // where its admission placed it: its GPU's budget, or the host
  int span = 1;                 // GPUs from home its admission placed it on (a split model's ranks)
  // Where its KV cache lives: its GPU's memory for a model priced there (a
  // split model's: home and the next span - 1 GPUs, a share each). Fixed at
  // admission: a settings change waits for the reload.
  Budget kv_budget() const { return home; }
  int kv_span() const { return home == Budget::kHost ? 1 : span; }
  // The part of kv_claimed held in budget b.
  uint64_t kv_claimed_in(Budget b) const {
    const int k = static_cast<int>(b) - static_cast<int>(home);
    if (k < 0 || k >= kv_span()) return 0;
    return kv_claimed / static_cast<uint64_t>(kv_span());
  }
  uint64_t freeable(Budget b) const {
    const size_t i = static_cast<size_t>(b);
    return std::max(resident[i], measured[i]);
  }
};

struct EnginePool::Waiter {
  uint64_t ticket = 0;
  std::string id;
  std::string request_id;  // the asking thread's, for the manager's log lines about this wait
  std::chrono::steady_clock::time_point deadline;
  AcquireCallback done;
};

struct ModelLease::AbortBlock {
  std::mutex mu;
  std::function<void(AbortReason)> handler;
  AbortReason reason = AbortReason::kNone;
  // Records the reason and runs the handler once (outside mu).
  void Fire(AbortReason r);
};

struct EnginePool::AdmissionPlan {
  Plan kind = Plan::kAdmit;
  std::shared_ptr<Slot> victim;
  PoolError error;
  BudgetBytes size{};  // placed on `gpu`
  int gpu = 0;
};

}  // namespace llmhost
