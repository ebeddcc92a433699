// EnginePool: creation, requests (acquire, queue, fairness), leases, the
// manager thread. Admission and unloading: pool_admission.cpp; admin,
// status and the enforcer's actions: pool_admin.cpp.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <future>

#include "pool/engine_pool_internal.h"
#include "util/file.h"
#include "util/log.h"

namespace llmhost {

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string LastComponent(const std::string& id) {
  const size_t slash = id.rfind('/');
  return slash == std::string::npos ? id : id.substr(slash + 1);
}

PoolError MakeError(PoolErrorCode code, std::string message, int retry = 0) {
  PoolError e;
  e.code = code;
  e.message = std::move(message);
  e.retry_after_s = retry;
  return e;
}

constexpr auto kShutdownLeaseWait = std::chrono::seconds(30);

}  // namespace

const char* SlotStateName(SlotState s) {
  switch (s) {
    case SlotState::kUnloaded: return "unloaded";
    case SlotState::kLoading: return "loading";
    case SlotState::kLoaded: return "loaded";
    case SlotState::kUnloading: return "unloading";
  }
  return "?";
}

// ---- ModelLease -----------------------------------------------------------------

void ModelLease::AbortBlock::Fire(AbortReason r) {
  std::function<void(AbortReason)> fn;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (reason != AbortReason::kNone) return;
    reason = r;
    fn = handler;
  }
  if (fn) fn(r);
}

ModelLease::~ModelLease() {
  {
    std::lock_guard<std::mutex> lock(abort_->mu);
    abort_->handler = nullptr;
  }
  pool_->Release(this);
}

void ModelLease::SetAbortHandler(std::function<void(AbortReason)> fn) {
  AbortReason r;
  {
    std::lock_guard<std::mutex> lock(abort_->mu);
    abort_->handler = fn;
    r = abort_->reason;
  }
  if (r != AbortReason::kNone && fn) fn(r);
}

AbortReason ModelLease::abort_reason() const {
  std::lock_guard<std::mutex> lock(abort_->mu);
  return abort_->reason;
}

// ---- creation -----------------------------------------------------------------

EnginePool::EnginePool(PoolOptions options, std::unique_ptr<EngineFactory> factory,
                       std::shared_ptr<MemoryProbe> probe, PoolClock clock,
                       std::unique_ptr<ModelSettingsStore> store)
    : options_(std::move(options)), factory_(std::move(factory)), probe_(std::move(probe)),
      clock_(std::move(clock)), store_(std::move(store)) {
  if (!clock_.unix_now) {
    clock_.unix_now = [] {
      return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    };
  }
  if (!clock_.sleep) {
    clock_.sleep = [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); };
  }
}

Result<std::unique_ptr<EnginePool>> EnginePool::Create(PoolOptions options,
                                                       std::unique_ptr<EngineFactory> factory,
                                                       std::shared_ptr<MemoryProbe> probe, PoolClock clock) {
  RETURN_IF_ERROR(ValidateGuardSettings(options.guard));
  if (!factory || !probe) return Status::InvalidArgument("engine pool: a factory and a probe are required");
  if (options.gpus.size() > static_cast<size_t>(kMaxGpus)) {
    return Status::InvalidArgument("engine pool: " + std::to_string(options.gpus.size()) + " GPUs, at most " +
                                   std::to_string(kMaxGpus) + " are budgeted");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ModelSettingsStore> store, ModelSettingsStore::Open(options.settings_path));
  std::unique_ptr<EnginePool> pool(new EnginePool(std::move(options), std::move(factory), std::move(probe),
                                                  std::move(clock), std::move(store)));
  pool->Rediscover();
  pool->manager_ = std::thread([p = pool.get()] { p->ManagerLoop(); });
  return pool;
}

EnginePool::~EnginePool() { Shutdown(); }

void EnginePool::Shutdown() {
  std::vector<Completion> done;
  std::vector<std::shared_ptr<LoadedEngine>> engines;
  {
    Lock lock(mu_);
    if (stop_ && !manager_.joinable()) return;
    stop_ = true;
    for (auto& [t, w] : waiters_) {
      done.emplace_back(std::move(w.done),
                        AcquireResult{nullptr, MakeError(PoolErrorCode::kShutdown, "the server is shutting down", 1)});
    }
    waiters_.clear();
  }
  cv_.notify_all();
  if (manager_.joinable()) manager_.join();  // finishes a load or unload in progress
  for (auto& [cb, r] : done) cb(std::move(r));
  {
    Lock lock(mu_);
    for (auto& [id, s] : slots_) {
      if (s->engine) engines.push_back(s->engine);
    }
  }
  // Stop every engine here (its requests end with abort; their leases are
  // released from the executor threads), then wait for the other leases.
  for (auto& e : engines) e->Stop();
  Lock lock(mu_);
  const bool released = idle_cv_.wait_for(lock, kShutdownLeaseWait, [&] {
    return std::all_of(slots_.begin(), slots_.end(), [](const auto& kv) { return kv.second->in_use == 0; });
  });
  if (!released) LOG_ERROR("pool: leases still held after shutdown; engines are kept");
  for (auto& [id, s] : slots_) {
    if (released) s->engine.reset();
    if (s->state != SlotState::kUnloaded) s->state = SlotState::kUnloaded;
  }
  committed_ = {};
  lock.unlock();
  engines.clear();
}

double EnginePool::Now() const { return clock_.unix_now(); }

void EnginePool::Notify() { cv_.notify_all(); }

void EnginePool::SetWakeHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  wake_hook_ = std::move(hook);
}

// ---- name resolution (rule 22) --------------------------------------------------

std::optional<std::string> EnginePool::ResolveLocked(const std::string& name) const {
  auto try_name = [&](const std::string& n) -> std::optional<std::string> {
    if (n.empty()) return std::nullopt;
    if (slots_.count(n)) return n;
    const std::string lower = Lower(n);
    std::optional<std::string> ci;
    int ci_count = 0;
    for (const auto& [id, s] : slots_) {
      if (Lower(id) == lower) {
        ci = id;
        ++ci_count;
      }
    }
    if (ci_count == 1) return ci;
    for (const auto& [id, s] : slots_) {
      if (s->settings.alias && *s->settings.alias == n) return id;
    }
    for (const auto& [id, s] : slots_) {
      if (s->settings.alias && Lower(*s->settings.alias) == lower) return id;
    }
    // The last path component ("Qwen3-8B-4bit" for "mlx-community/Qwen3-8B-4bit") when unique.
    std::optional<std::string> last;
    int last_count = 0;
    for (const auto& [id, s] : slots_) {
      if (id.find('/') != std::string::npos && Lower(LastComponent(id)) == lower) {
        last = id;
        ++last_count;
      }
    }
    if (last_count == 1) return last;
    return std::nullopt;
  };
  if (auto r = try_name(name)) return r;
  // A provider prefix ("openai/qwen3-8b"): strip it and retry.
  const size_t slash = name.find('/');
  if (slash != std::string::npos) {
    if (auto r = try_name(name.substr(slash + 1))) return r;
  }
  if (options_.model_fallback) {
    for (const auto& [id, s] : slots_) {
      if (s->settings.is_default) return id;
    }
  }
  return std::nullopt;
}

std::string EnginePool::UnknownModelMessage(const std::string& name) const {
  std::string available;
  for (const auto& [id, s] : slots_) {
    if (s->settings.hidden) continue;
    available += (available.empty() ? "" : ", ") + id;
  }
  return "The model '" + name + "' does not exist. Available models: " +
         (available.empty() ? "(none: check --model-dir)" : available);
}

Result<std::string> EnginePool::Resolve(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto id = ResolveLocked(name)) return *id;
  return Status::NotFound(UnknownModelMessage(name));
}

std::shared_ptr<EnginePool::Slot> EnginePool::FindSlot(const std::string& id) const {
  auto it = slots_.find(id);
  return it == slots_.end() ? nullptr : it->second;
}

// ---- requests ---------------------------------------------------------------------

bool EnginePool::Grantable(const Waiter& w, const Slot& s) const {
  if (s.state != SlotState::kLoaded || s.reload_pending || s.pending_unload || paused_) return false;
  if (blocked_ticket_ != 0 && blocked_ticket_ < w.ticket && !s.settings.pinned) {
    // The head of the queue waits for busy models' memory: requests that
    // arrived after it do not keep an evictable model busy.
    auto head = waiters_.find(blocked_ticket_);
    if (head != waiters_.end() && head->second.id != s.model.id) return false;
  }
  return true;
}

std::unique_ptr<ModelLease> EnginePool::MakeLease(const std::shared_ptr<Slot>& slot) {
  std::unique_ptr<ModelLease> lease(new ModelLease());
  lease->pool_ = this;
  lease->id_ = slot->model.id;
  lease->slot_ = slot;
  lease->engine_ = slot->engine;
  lease->served_ = slot->engine->served();
  lease->settings_ = slot->settings;
  lease->abort_ = std::make_shared<ModelLease::AbortBlock>();
  slot->leases.push_back(lease->abort_);
  slot->in_use++;
  slot->last_access = Now();
  return lease;
}

void EnginePool::Release(ModelLease* lease) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = *std::static_pointer_cast<Slot>(lease->slot_);
    s.in_use = std::max<int64_t>(0, s.in_use - 1);
    auto& v = s.leases;
    v.erase(std::remove(v.begin(), v.end(), lease->abort_), v.end());
    s.last_access = Now();
  }
  cv_.notify_all();
  idle_cv_.notify_all();
}

uint64_t EnginePool::AcquireAsync(const std::string& name, AcquireCallback done, double timeout_s) {
  AcquireResult now;
  {
    Lock lock(mu_);
    if (stop_) {
      now.error = MakeError(PoolErrorCode::kShutdown, "the server is shutting down", 1);
    } else if (std::optional<std::string> id = ResolveLocked(name); !id) {
      now.error = MakeError(PoolErrorCode::kNotFound, UnknownModelMessage(name));
    } else {
      std::shared_ptr<Slot> slot = FindSlot(*id);
      Waiter w;
      w.ticket = next_ticket_++;
      w.id = *id;
      w.request_id = CurrentRequestId();
      if (slot->load_failure) {
        now.error = *slot->load_failure;
      } else if (slot->pending_unload) {
        now.error = MakeError(PoolErrorCode::kUnloading, "the model '" + *id + "' is being unloaded");
      } else if (slot->state == SlotState::kUnloaded && !ModelStillPresent(slot->model)) {
        slots_.erase(*id);  // rule 10: the model has gone
        now.error = MakeError(PoolErrorCode::kNotFound, "the model '" + *id + "' is no longer at " +
                                                            slot->model.path);
      } else if (Grantable(w, *slot)) {
        now.lease = MakeLease(slot);
      } else {
        const double t = timeout_s >= 0 ? timeout_s : options_.model_wait_timeout_s;
        w.deadline = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(std::min(t, 1e7)));
        w.done = std::move(done);
        const uint64_t ticket = w.ticket;
        waiters_.emplace(ticket, std::move(w));
        lock.unlock();
        cv_.notify_all();
        return ticket;
      }
    }
  }
  done(std::move(now));
  return 0;
}

void EnginePool::CancelAcquire(uint64_t ticket) {
  AcquireCallback cb;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waiters_.find(ticket);
    if (it == waiters_.end()) return;
    cb = std::move(it->second.done);
    waiters_.erase(it);
    if (blocked_ticket_ == ticket) blocked_ticket_ = 0;
  }
  cv_.notify_all();
  cb(AcquireResult{nullptr, MakeError(PoolErrorCode::kCancelled, "the request was cancelled while queued")});
}

AcquireResult EnginePool::Acquire(const std::string& name, double timeout_s) {
  auto promise = std::make_shared<std::promise<AcquireResult>>();
  std::future<AcquireResult> f = promise->get_future();
  AcquireAsync(name, [promise](AcquireResult r) { promise->set_value(std::move(r)); }, timeout_s);
  return f.get();
}

// Serves or fails queued requests, in arrival order.
void EnginePool::GrantWaiters(std::vector<Completion>* done) {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    Waiter& w = it->second;
    std::shared_ptr<Slot> s = FindSlot(w.id);
    AcquireResult r;
    if (!s) {
      r.error = MakeError(PoolErrorCode::kNotFound, "the model '" + w.id + "' is no longer available");
    } else if (s->load_failure) {
      r.error = *s->load_failure;
    } else if (s->pending_unload) {
      r.error = MakeError(PoolErrorCode::kUnloading, "the model '" + w.id + "' is being unloaded");
    } else if (Grantable(w, *s)) {
      r.lease = MakeLease(s);
    } else if (now >= w.deadline) {
      double est = load_s_per_gb_ * static_cast<double>(s->model.weight_bytes) / static_cast<double>(kGiB);
      const int retry = load_s_per_gb_ > 0 ? static_cast<int>(std::clamp(std::ceil(est), 1.0, 60.0)) : 5;
      r.error = MakeError(PoolErrorCode::kTimeout,
                          "the model '" + w.id + "' could not be served within the wait limit (" +
                              std::to_string(static_cast<int64_t>(options_.model_wait_timeout_s)) +
                              " s): memory is held by models that are still busy; retry later",
                          retry);
    } else {
      ++it;
      continue;
    }
    if (blocked_ticket_ == it->first) blocked_ticket_ = 0;
    done->emplace_back(std::move(w.done), std::move(r));
    it = waiters_.erase(it);
  }
}

void EnginePool::ManagerLoop() {
  Lock lock(mu_);
  while (!stop_) {
    std::vector<Completion> done;
    const bool progressed = ManagerStep(lock, &done);
    if (!done.empty()) {
      lock.unlock();
      for (auto& [cb, r] : done) cb(std::move(r));
      done.clear();
      lock.lock();
      continue;
    }
    if (progressed || stop_) continue;
    // Sleep until something changes or the next queued request times out.
    // An engine's request count trails its final events by a step: when a
    // model without leases still reports requests, look again soon.
    bool trailing = false;
    for (const auto& [id, s] : slots_) {
      trailing |= s->state == SlotState::kLoaded && s->in_use == 0 && s->engine && s->engine->ActiveRequests() > 0;
    }
    auto next = std::chrono::steady_clock::now() +
                (trailing ? std::chrono::milliseconds(20) : std::chrono::milliseconds(1000));
    for (const auto& [t, w] : waiters_) next = std::min(next, w.deadline);
    cv_.wait_until(lock, next);
  }
}

bool EnginePool::ManagerStep(Lock& lock, std::vector<Completion>* done) {
  GrantWaiters(done);
  if (!done->empty()) return true;
  // Pending unloads and reloads whose model has drained.
  for (auto& [id, s] : slots_) {
    if (s->state == SlotState::kLoaded && (s->pending_unload || s->reload_pending) && IsQuiescent(*s)) {
      std::shared_ptr<Slot> slot = s;
      slot->state = SlotState::kUnloading;
      UnloadMarked(lock, slot, slot->pending_unload ? "pending unload, drained" : "settings changed");
      return true;
    }
  }
  if (MakeRoomForKv(lock)) return true;
  return AdmitHead(lock, done);
}

RequestCounts EnginePool::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  RequestCounts c;
  for (const auto& [id, s] : slots_) c.active += s->in_use;
  c.waiting = static_cast<int64_t>(waiters_.size());
  c.memory_blocked = blocked_ticket_ != 0;
  return c;
}

}  // namespace llmhost
