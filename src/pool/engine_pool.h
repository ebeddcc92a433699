// EnginePool: many models, one machine, never over-committed.
//
// The pool knows every discovered model, loads one when a request needs it,
// and keeps as many loaded as memory allows. A request holds a ModelLease for
// its whole life; a leased or busy model is never evicted.
//
//   auto pool = EnginePool::Create(options, factory, probe);
//   AcquireResult r = pool->Acquire("qwen3-8b");          // or AcquireAsync
//   if (r.ok()) use r.lease->served()->engine ...;        // lease released on destruction
//
// Admission (spec rule 11, with the accumulator fix): before loading model M
// of resident size S, per memory budget,
//     current = max(device_active, process_footprint, committed_model_bytes)
//     target  = min(soft target, ceiling)
// while current + S > target, evict one idle victim (victim_choice.h) and
// re-read; with no victim left, admit when current + S ≤ ceiling (above the
// soft target), or — after this admission evicted something — when
// max(device_active, committed) + S ≤ ceiling (the evicted model's RSS may
// lag). Otherwise:
//   - the guard is off: admit anyway (best effort, a warning);
//   - S > ceiling, or S + what pinned models hold > ceiling: it can never
//     fit: ModelTooLarge / InsufficientMemory (HTTP 507) at once;
//   - some unpinned model is busy (leased, active, loading): WAIT until it
//     drains and can be evicted (up to the request's timeout, then 503).
//
// Queue and fairness: requests that cannot be served at once wait in one
// queue by arrival. Models are admitted in the order of their first waiting
// request; while the head waits for memory held by busy models, new requests
// for unpinned loaded models queue behind it (so the busy models drain);
// requests for a loading model wait for it. One manager thread performs the
// admissions, evictions and loads, one at a time.
//
// Accounting: committed_model_bytes grows by S when a load is admitted and
// shrinks after the unloaded model's memory settled (the settle barrier, rule
// 15). A load failure is cached (409) until the next Rediscover().
//
// Thread safety: every public method may be called from any thread.
// Callbacks of AcquireAsync run on the calling thread (served at once) or on
// the manager thread; they must not block for long.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/kv_budget.h"
#include "pool/loaded_engine.h"
#include "pool/memory_limits.h"
#include "pool/memory_probe.h"
#include "pool/model_discovery.h"
#include "pool/model_removal.h"
#include "pool/model_settings.h"
#include "pool/pool_types.h"

namespace llmhost {

class EnginePool;

// A request's hold on a loaded model: the model is not evicted while any
// lease exists. Destroying the lease releases it (any thread).
class ModelLease {
 public:
  ~ModelLease();
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;

  const std::string& id() const { return id_; }
  // The real model (null with test fakes).
  const std::shared_ptr<ServedModel>& served() const { return served_; }
  LoadedEngine& engine() const { return *engine_; }
  // The model's settings when the lease was taken (sampling defaults,
  // chat_template_kwargs, max_tokens ...).
  const ModelSettings& settings() const { return settings_; }
  // `fn` runs once, on the thread that aborts, when the pool ends this
  // request early (manual unload, memory pressure); at once when that
  // already happened. It must not block and must not destroy the lease.
  void SetAbortHandler(std::function<void(AbortReason)> fn);
  AbortReason abort_reason() const;

  struct AbortBlock;  // engine_pool_internal.h

 private:
  friend class EnginePool;
  ModelLease() = default;

  EnginePool* pool_ = nullptr;
  std::string id_;
  std::shared_ptr<void> slot_;  // EnginePool::Slot, kept alive for Release
  std::shared_ptr<LoadedEngine> engine_;
  std::shared_ptr<ServedModel> served_;
  ModelSettings settings_;
  std::shared_ptr<AbortBlock> abort_;
};

struct AcquireResult {
  std::unique_ptr<ModelLease> lease;
  PoolError error;  // kOk when lease is set
  bool ok() const { return lease != nullptr; }
};
using AcquireCallback = std::function<void(AcquireResult)>;

struct DeleteResult {
  PoolError error;  // kNotFound; kBusy when refused (pinned, loading, serving)
  std::string id;   // the model deleted
  ModelRemoval removal;
  bool ok() const { return error.ok(); }
};

struct GpuTarget {
  int cuda_index = 0;
  PciLocation pci;
};

struct PoolOptions {
  std::vector<std::string> model_dirs;
  GuardSettings guard;
  // The GPUs models may be placed on, each its own budget (GpuBudget(n) for
  // the n-th): CUDA's number and its PCI location (SelectGpu finds its
  // readings). A model priced in GPU memory loads on the one where it fits
  // with the fewest evictions (or the one its settings' `device` names).
  std::vector<GpuTarget> gpus = {GpuTarget{}};
  double model_wait_timeout_s = 120;     // a queued request's limit (then 503)
  std::optional<int64_t> idle_ttl_s;     // global idle TTL; none: models stay
  bool model_fallback = false;           // unknown names use the default model
  std::string settings_path;             // <home>/model_settings.json; "" in memory
  int settle_rounds = 10;                // settle barrier: rounds, seconds apart
  double settle_interval_s = 0.5;
  int emergency_reclaim_rounds = 3;
  // The KV block store's RAM (hot tier + blocks queued for the SSD), counted
  // as committed host memory at admission; before a model is evicted, made
  // to wait or refused for it, the store is shrunk (it is a cache: what it
  // drops in write-back mode goes to the SSD). Unset: no store.
  std::function<uint64_t()> cache_ram_bytes;
  std::function<uint64_t(uint64_t keep_bytes)> shrink_cache;  // returns the bytes freed
};

// Time sources, replaceable in tests. unix_now: wall clock (last_access,
// TTL); sleep: the settle barrier's pause.
struct PoolClock {
  std::function<double()> unix_now;
  std::function<void(double seconds)> sleep;
};

class EnginePool {
 public:
  static Result<std::unique_ptr<EnginePool>> Create(PoolOptions options,
                                                    std::unique_ptr<EngineFactory> factory,
                                                    std::shared_ptr<MemoryProbe> probe,
                                                    PoolClock clock = {});
  // Shutdown().
  ~EnginePool();
  EnginePool(const EnginePool&) = delete;
  EnginePool& operator=(const EnginePool&) = delete;

  // Stops every engine (their requests end with abort), fails queued
  // requests (503) and waits (bounded) for leases to be released.
  void Shutdown();

  // ---- requests -------------------------------------------------------------
  // Resolves `name` (rule 22) and calls `done` with a lease once the model is
  // loaded and admitted, or with an error. timeout_s < 0: the pool's
  // model_wait_timeout. Returns a ticket for CancelAcquire (0 when `done`
  // already ran).
  uint64_t AcquireAsync(const std::string& name, AcquireCallback done, double timeout_s = -1);
  // The client went away: `done` runs with kCancelled (unless it already ran).
  void CancelAcquire(uint64_t ticket);
  AcquireResult Acquire(const std::string& name, double timeout_s = -1);  // blocking
  // The id `name` resolves to, or NotFound listing the models.
  Result<std::string> Resolve(const std::string& name) const;

  // ---- admin ------------------------------------------------------------------
  // Loads (as a request would, waiting for memory) and releases the lease.
  PoolError Load(const std::string& id, double timeout_s = -1);
  // Manual unload (rule 17): quiescent → unloaded now; busy → its requests
  // are aborted (kModelUnloaded) and it unloads once drained; loading → Busy.
  UnloadResult Unload(const std::string& id);
  // Rule 18: Busy when pinned, loading, leased or active; never aborts.
  PoolError UnloadIfIdle(const std::string& id);
  // How long the loaded model stays after its last request, for this load
  // only (Ollama's keep_alive): seconds (negative: until evicted or
  // unloaded); nullopt: the settings' TTL again. A model not loaded: no-op.
  PoolError SetKeepAlive(const std::string& id, std::optional<double> seconds);
  // Settings: validated, persisted, applied now. A change of runtime
  // settings (max context, type override) reloads the model once it drains.
  // NotFound for an unknown model, InvalidArgument for a bad value.
  Result<ModelSettings> UpdateSettings(const std::string& id, const nlohmann::json& patch);
  Result<ModelSettings> Settings(const std::string& id) const;
  Result<ModelSettings> SetPinned(const std::string& id, bool pinned);
  // Deletes the model's files (model_removal.h) and forgets it
  // (pool_delete.cpp). A loaded idle model is unloaded first; a pinned one,
  // or one loading, serving or awaited by requests, is refused (kBusy):
  // deleting never cuts a request short or drops a model kept on purpose. A
  // model still serving gets 2 s to finish first (a request whose answer was
  // just sent lets its lease go a moment later).
  DeleteResult DeleteModel(const std::string& name);
  // Re-runs discovery and merges (rule 4).
  void Rediscover();
  // Loads every pinned model (rule 20); a failure is logged and skipped.
  void PreloadPinned();

  // ---- status -----------------------------------------------------------------
  std::vector<ModelStatus> ModelStatuses() const;  // every discovered model, by id
  MemorySnapshot Memory();                          // reads the probe
  RequestCounts Requests() const;
  PoolEvents Events() const;
  std::vector<DiscoveredModel> Models() const;
  // The loaded model `id` (statistics only: no lease, last_access untouched);
  // null when it is not loaded.
  std::shared_ptr<ServedModel> Peek(const std::string& id) const;
  double load_seconds_per_gb() const;  // EMA of load speed (0: no load yet)

  // ---- memory enforcer interface (memory_enforcer.h) -------------------------
  // Current limits of each budget from fresh readings.
  MemorySnapshot Sample();
  // The same from the cheap process reading (VmRSS, no PSS: `pss` is 0):
  // what a request's prefill check, the enforcer's polls and the charts read.
  // Sample()'s smaps_rollup walks every page table (~12 ms a resident GiB).
  MemorySnapshot SampleRss();
  void SetAdmissionPaused(bool paused);
  bool admission_paused() const;
  // Called when the pool wants a fast enforcer poll (load start, unload).
  void SetWakeHook(std::function<void()> hook);
  bool HasActivity() const;   // requests, waiters or a load in progress
  size_t LoadedCount() const;
  // Ladder steps; each returns true when it did something.
  bool UnloadDrainedPending();
  // Evicts the LRU idle victim (rule 13, plain LRU). With
  // `only_if_several_unpinned`, only when more than one unpinned model is loaded;
  // victims ranked by what they hold in `budget`.
  bool EvictIdle(bool only_if_several_unpinned, const std::string& exclude_id = "", int64_t bytes_needed = 0,
                 Budget budget = Budget::kHost);
  // Aborts the requests of the least recently used busy unpinned model (kept
  // loaded; `mark_pending_unload` in an emergency).
  bool AbortLruBusy(bool mark_pending_unload);
  bool AbortLoading();
  bool AbortAllRequests();  // every model, pinned too (emergency)
  void Reclaim();           // engines' caches + malloc_trim
  // Rule 21: unloads idle unpinned models past their TTL; refreshes
  // last_access of busy ones. Returns how many were unloaded.
  int ExpireIdle();

  // ---- prefill guard ------------------------------------------------------------
  // Prices a prompt of `prompt_tokens` (`cached_tokens` of them already in
  // the prefix cache) for the leased model; evicts idle models (not the
  // requester) and reclaims before giving up. kPrefillRejected (400) carries
  // estimated_bytes / limit_bytes.
  PoolError CheckPrefill(const ModelLease& lease, int64_t prompt_tokens, int64_t cached_tokens);

  const PoolOptions& options() const { return options_; }

 private:
  friend class ModelLease;
  friend class SlotKvBudget;
  struct Slot;
  struct Waiter;
  enum class Plan { kAdmit, kEvict, kWait, kNever };
  struct AdmissionPlan;
  using Lock = std::unique_lock<std::mutex>;
  using Completion = std::pair<AcquireCallback, AcquireResult>;

  EnginePool(PoolOptions options, std::unique_ptr<EngineFactory> factory,
             std::shared_ptr<MemoryProbe> probe, PoolClock clock,
             std::unique_ptr<ModelSettingsStore> store);

  // engine_pool.cpp: requests, leases, the manager loop.
  void ManagerLoop();
  bool ManagerStep(Lock& lock, std::vector<Completion>* done);
  void GrantWaiters(std::vector<Completion>* done);
  bool Grantable(const Waiter& w, const Slot& s) const;
  std::unique_ptr<ModelLease> MakeLease(const std::shared_ptr<Slot>& slot);
  void Release(ModelLease* lease);
  std::optional<std::string> ResolveLocked(const std::string& name) const;
  // True when model `name` still holds a lease or a running request after
  // `grace` (polled); false as soon as it holds none (or is not known).
  bool ServingWithin(const std::string& name, std::chrono::steady_clock::duration grace);
  // The idle time after which the slot unloads; nullopt: none (pool_admin.cpp).
  std::optional<int64_t> IdleTtl(const Slot& s) const;
  std::string UnknownModelMessage(const std::string& name) const;
  void Notify();
  double Now() const;

  // pool_admission.cpp: admission, load, unload, settle barrier.
  AdmissionPlan PlanAdmission(const Slot& head, uint64_t ticket);
  // Which of options_.gpus a GPU model goes to: the one its settings name,
  // else where it needs the fewest evictions (then the most room); the GPU
  // an eviction for this ticket made room on stays chosen. -1: none fits
  // (the error says why).
  int ChooseGpu(const Slot& head, uint64_t ticket, const MemorySnapshot& m, PoolError* error) const;
  // The idle models PlanAdmission would evict from budget `b` before `size`
  // fits there: how many (kWaitCost: not without waiting for a busy model;
  // kNeverCost: never), and the last access of the most recent of them.
  struct Fit {
    int evictions = 0;
    double newest_victim = 0;
  };
  Fit EvictionsToFit(const Slot& head, Budget b, uint64_t size, const MemorySnapshot& m) const;
  // "host", "GPU 1" (CUDA's number): for messages.
  std::string BudgetLabel(Budget b) const;
  bool AdmitHead(Lock& lock, std::vector<Completion>* done);
  void LoadSlot(Lock& lock, const std::shared_ptr<Slot>& slot);
  // REQUIRES: the slot was marked kUnloading by the caller (with mu_ held).
  void UnloadMarked(Lock& lock, const std::shared_ptr<Slot>& slot, const char* why);
  void SettleBarrier(const BudgetBytes& size, const BudgetBytes& before, const Slot* unloaded);
  std::vector<VictimCandidate> Candidates(Budget b) const;
  BudgetBytes DeviceActiveLocked() const;
  MemorySnapshot SampleLocked();
  MemorySnapshot SampleRssLocked();                     // SampleRss's
  MemorySnapshot SampleWithLocked(const ProcessMemory& process);  // both samples
  // The host part of a sample, from the cheap readings (Rss without PSS, no
  // GPU query): KV growth claims, made on an engine's executor.
  MemorySnapshot SampleHostLocked();
  MemorySnapshot HostSnapshotLocked(const ProcessMemory& process);  // both samples' host part
  bool IsQuiescent(const Slot& s) const;
  bool OtherActivity(const Slot* except) const;

  // pool_kv_budget.cpp: a loaded engine's KV growth, in committed_.
  bool ClaimKv(const std::shared_ptr<Slot>& slot, uint64_t bytes);
  // ClaimKv of a model split over several GPUs: a share on each, granted while every GPU stays under its ceiling.
  bool ClaimSplitKv(Lock& lock, const std::shared_ptr<Slot>& slot, uint64_t bytes);
  void ReturnKv(const std::shared_ptr<Slot>& slot, uint64_t bytes);
  bool MakeRoomForKv(Lock& lock);  // the manager: evicts an idle model for a denied claim
  // Bytes of model `id` and the pinned models in budget `b` at their admission sizes
  // (KV claims left out): what stays when nothing else runs.
  uint64_t AloneBytes(const std::string& id, Budget b) const;
  // The KvBudget a slot's engine claims its KV growth from.
  std::shared_ptr<KvBudget> MakeKvBudget(const std::shared_ptr<Slot>& slot);

  // pool_admin.cpp helpers.
  void AbortSlotLeases(Slot& s, AbortReason reason, std::vector<std::shared_ptr<ModelLease::AbortBlock>>* fire);
  std::shared_ptr<Slot> FindSlot(const std::string& id) const;

  PoolOptions options_;
  std::unique_ptr<EngineFactory> factory_;
  std::shared_ptr<MemoryProbe> probe_;
  PoolClock clock_;
  std::unique_ptr<ModelSettingsStore> store_;

  mutable std::mutex mu_;
  std::condition_variable cv_;         // the manager: something changed
  std::condition_variable idle_cv_;    // Shutdown: leases released
  std::map<std::string, std::shared_ptr<Slot>> slots_;  // by id
  std::map<uint64_t, Waiter> waiters_;                  // by ticket (arrival)
  uint64_t next_ticket_ = 1;
  uint64_t blocked_ticket_ = 0;   // the head waiter waiting for busy models' memory
  uint64_t evicted_for_ticket_ = 0;  // the head for which this admission evicted
  std::shared_ptr<Slot> loading_;    // the load in progress (one at a time)
  BudgetBytes committed_{};          // committed_model_bytes per budget
  bool paused_ = false;
  bool stop_ = false;
  int unloads_in_progress_ = 0;
  double load_s_per_gb_ = 0;         // EMA
  PoolEvents events_;                // loads and unloads since the start
  std::function<void()> wake_hook_;
  std::thread manager_;
};

}  // namespace llmhost
