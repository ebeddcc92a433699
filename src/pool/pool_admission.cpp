// EnginePool: admission (rule 11 with the accumulator floor), loading,
// unloading and the settle barrier (rule 15).
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "pool/engine_pool_internal.h"
#include "util/file.h"
#include "util/log.h"

namespace llmhost {

namespace {

// EvictionsToFit's answers where evicting idle models is not enough.
constexpr int kWaitCost = INT32_MAX - 1;  // a busy model holds the room
constexpr int kNeverCost = INT32_MAX;     // larger than the ceiling, or than what pinned models leave

uint64_t Sat(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

std::string Mb(uint64_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

// "[a:idle:350MiB,b:busy:350MiB]": loaded models, least recently used first.
std::string LruList(std::vector<VictimCandidate> c) {
  std::stable_sort(c.begin(), c.end(), [](const VictimCandidate& x, const VictimCandidate& y) {
    return x.last_access != y.last_access ? x.last_access < y.last_access : x.id < y.id;
  });
  std::string out = "[";
  for (const VictimCandidate& v : c) {
    const char* state = v.pinned ? "pinned" : (v.leased || v.active) ? "busy" : "idle";
    out += (out.size() > 1 ? "," : "") + v.id + ":" + state + ":" + Mb(v.freeable_bytes);
  }
  return out + "]";
}

PoolError MakeError(PoolErrorCode code, std::string message) {
  PoolError e;
  e.code = code;
  e.message = std::move(message);
  return e;
}

}  // namespace

BudgetBytes EnginePool::DeviceActiveLocked() const {
  BudgetBytes total{};
  for (const auto& [id, s] : slots_) {
    if (!s->engine) continue;
    const BudgetBytes b = OnGpu(s->engine->DeviceActiveBytes(), GpuOf(s->home));
    for (size_t i = 0; i < total.size(); ++i) total[i] += b[i];
  }
  return total;
}

MemorySnapshot EnginePool::SampleLocked() { return SampleWithLocked(probe_->Process()); }

MemorySnapshot EnginePool::SampleRssLocked() { return SampleWithLocked(probe_->ProcessRss()); }

MemorySnapshot EnginePool::SampleWithLocked(const ProcessMemory& process) {
  MemorySnapshot m = HostSnapshotLocked(process);
  m.gpus = probe_->Gpus();
  for (size_t n = 0; n < options_.gpus.size(); ++n) {
    const GpuTarget& t = options_.gpus[n];
    DeviceBudgetSnapshot d;
    d.cuda_index = t.cuda_index;
    d.usage = m.device_active[BudgetIndex(GpuBudget(static_cast<int>(n)))];
    if (const GpuMemory* g = SelectGpu(m.gpus, t.cuda_index, t.pci)) {
      d.present = true;
      d.gpu = g->index;
      d.limits = ComputeDeviceLimits(options_.guard, *g, d.usage);
      const PressureLevel level = LevelFor(d.usage, d.limits);
      if (level > m.level) {
        m.level = level;
        m.worst = GpuBudget(static_cast<int>(n));
      }
    }
    m.devices.push_back(std::move(d));
  }
  return m;
}

MemorySnapshot EnginePool::SampleHostLocked() { return HostSnapshotLocked(probe_->ProcessRss()); }

MemorySnapshot EnginePool::HostSnapshotLocked(const ProcessMemory& p) {
  MemorySnapshot m;
  m.footprint = p.rss_bytes;
  m.pss = p.pss_bytes;
  m.system = probe_->System();
  m.device_active = DeviceActiveLocked();
  m.committed = committed_;
  if (options_.cache_ram_bytes) m.cache_bytes = options_.cache_ram_bytes();
  LimitInputs in;
  in.system = m.system;
  in.footprint = m.footprint;
  // No hot-cache reservation in the prefill limit: the KV store's RAM is in
  // the footprint already, and it is a cache that gives way (the pool and the
  // enforcer shrink it) rather than room a prompt must leave free.
  m.host = ComputeLimits(options_.guard, in);
  m.usage = std::max(m.device_active[0], m.footprint);
  m.level = LevelFor(m.usage, m.host);
  m.admission_paused = paused_;
  return m;
}

MemorySnapshot EnginePool::Sample() {
  std::lock_guard<std::mutex> lock(mu_);
  return SampleLocked();
}

MemorySnapshot EnginePool::SampleRss() {
  std::lock_guard<std::mutex> lock(mu_);
  return SampleRssLocked();
}

MemorySnapshot EnginePool::Memory() { return Sample(); }

bool EnginePool::IsQuiescent(const Slot& s) const {
  return s.in_use == 0 && (!s.engine || s.engine->ActiveRequests() == 0);
}

bool EnginePool::OtherActivity(const Slot* except) const {
  if (loading_ && loading_.get() != except) return true;
  for (const auto& [id, s] : slots_) {
    if (s.get() == except) continue;
    if (s->state == SlotState::kLoading || !IsQuiescent(*s)) return true;
  }
  return false;
}

std::vector<VictimCandidate> EnginePool::Candidates(Budget b) const {
  std::vector<VictimCandidate> out;
  for (const auto& [id, s] : slots_) {
    // A model holding nothing in this budget frees nothing there.
    if (s->state != SlotState::kLoaded || s->freeable(b) == 0) continue;
    VictimCandidate c;
    c.id = id;
    c.freeable_bytes = s->freeable(b);
    c.last_access = s->last_access;
    c.pinned = s->pinned();
    c.leased = s->in_use > 0;
    c.active = s->engine && s->engine->ActiveRequests() > 0;
    out.push_back(std::move(c));
  }
  return out;
}

EnginePool::AdmissionPlan EnginePool::PlanAdmission(const Slot& head, uint64_t ticket) {
  AdmissionPlan plan;
  MemorySnapshot m = SampleLocked();
  plan.size = head.estimate;
  if (head.on_gpu()) {
    plan.gpu = ChooseGpu(head, ticket, m, &plan.error);
    if (plan.gpu < 0) {
      plan.kind = Plan::kNever;
      return plan;
    }
    plan.size = OnGpu(head.estimate, plan.gpu);
  }
  for (size_t i = 0; i < plan.size.size(); ++i) {
    const Budget b = static_cast<Budget>(i);
    const uint64_t size = plan.size[i];
    if (size == 0) continue;
    const MemoryLimits& L = *m.Limits(b);  // ChooseGpu picked a GPU with readings
    const bool best_effort = !L.guard_on || L.admission_ceiling == 0;
    const uint64_t ceiling = L.admission_ceiling == 0 ? UINT64_MAX : L.admission_ceiling;
    const uint64_t target = std::min(L.soft_bytes == 0 ? ceiling : L.soft_bytes, ceiling);
    uint64_t footprint = b == Budget::kHost ? m.footprint : 0;
    uint64_t cache = b == Budget::kHost ? m.cache_bytes : 0;
    uint64_t current = std::max({m.device_active[i], footprint, committed_[i] + cache});
    uint64_t projected = current + size;
    if (projected > target && cache > 0 && options_.shrink_cache) {
      // The KV cache gives way before any model does.
      const uint64_t excess = projected - target;
      const uint64_t freed = options_.shrink_cache(cache > excess ? cache - excess : 0);
      if (freed > 0) {
        LOG_INFO("pool: shrank the KV cache by " << Mb(freed) << " for " << head.model.id);
        m = SampleLocked();
        footprint = m.footprint;
        cache = m.cache_bytes;
        current = std::max({m.device_active[i], footprint, committed_[i] + cache});
        projected = current + size;
      }
    }
    std::ostringstream log;
    log << "pool: admission model=" << head.model.id << " budget=" << BudgetLabel(b) << " size=" << Mb(size)
        << " device_active=" << Mb(m.device_active[i]) << " footprint=" << Mb(footprint)
        << " committed=" << Mb(committed_[i]) << " cache=" << Mb(cache) << " current=" << Mb(current)
        << " target=" << Mb(target)
        << " ceiling=" << (ceiling == UINT64_MAX ? std::string("none") : Mb(ceiling));
    if (projected <= target) {
      LOG_INFO(log.str() << " outcome=admit");
      continue;
    }
    const std::vector<VictimCandidate> cands = Candidates(b);
    if (auto v = ChooseVictim(cands, static_cast<int64_t>(projected - target), head.model.id)) {
      plan.kind = Plan::kEvict;
      plan.victim = FindSlot(cands[*v].id);
      LOG_INFO(log.str() << " lru=" << LruList(cands) << " victim=" << cands[*v].id
                         << " frees=" << Mb(cands[*v].freeable_bytes) << " outcome=evict");
      return plan;
    }
    if (projected <= ceiling) {
      LOG_INFO(log.str() << " outcome=admit_above_soft_target");
      continue;
    }
    if (evicted_for_ticket_ == ticket) {
      // The evicted model's resident pages may not have left the footprint yet.
      const uint64_t alt = std::max(m.device_active[i], committed_[i] + cache) + size;
      if (alt <= ceiling) {
        LOG_INFO(log.str() << " outcome=admit_footprint_lags");
        continue;
      }
    }
    if (best_effort) {
      LOG_WARN(log.str() << " outcome=admit_best_effort (the memory guard is off: memory is over-committed)");
      continue;
    }
    const std::string need = "the model '" + head.model.id + "' needs " + FormatBytes(size);
    if (size > ceiling) {
      plan.kind = Plan::kNever;
      plan.error = MakeError(PoolErrorCode::kTooLarge, need + " of " + BudgetLabel(b) +
                                                           " memory, more than " + L.Describe() + ": " + L.Advice());
      LOG_WARN(log.str() << " outcome=refuse_too_large");
      return plan;
    }
    uint64_t pinned = 0;
    bool busy = false;
    for (const auto& [id, s] : slots_) {
      if (s.get() == &head || s->state == SlotState::kUnloaded) continue;
      if (s->pinned()) {
        pinned += s->resident[i];
      } else {
        busy = true;  // loaded but not evictable now, loading or unloading
      }
    }
    if (pinned + size > ceiling) {
      plan.kind = Plan::kNever;
      plan.error = MakeError(PoolErrorCode::kInsufficientMemory,
                             need + " but pinned models hold " + FormatBytes(pinned) + " of " + L.Describe() +
                                 ": unpin a model or " + L.Advice());
      LOG_WARN(log.str() << " pinned=" << Mb(pinned) << " outcome=refuse_pinned");
      return plan;
    }
    if (busy) {
      plan.kind = Plan::kWait;
      if (blocked_ticket_ == ticket) {
        LOG_DEBUG(log.str() << " outcome=wait_for_busy_models");
      } else {
        LOG_INFO(log.str() << " outcome=wait_for_busy_models");
      }
      return plan;
    }
    plan.kind = Plan::kNever;
    plan.error = MakeError(PoolErrorCode::kInsufficientMemory,
                           need + " but " + FormatBytes(current) + " are in use (device-active " +
                               FormatBytes(m.device_active[i]) + ", footprint " + FormatBytes(footprint) +
                               ", committed " + FormatBytes(committed_[i]) + ") of " + L.Describe() + ": " +
                               L.Advice());
    LOG_WARN(log.str() << " outcome=refuse_insufficient");
    return plan;
  }
  plan.kind = Plan::kAdmit;
  return plan;
}

std::string EnginePool::BudgetLabel(Budget b) const {
  const int g = GpuOf(b);
  if (g < 0) return "host";
  return "GPU " + std::to_string(g < static_cast<int>(options_.gpus.size()) ? options_.gpus[g].cuda_index : g);
}

EnginePool::Fit EnginePool::EvictionsToFit(const Slot& head, Budget b, uint64_t size, const MemorySnapshot& m) const {
  const MemoryLimits* L = m.Limits(b);
  if (!L) return {kNeverCost, 0};
  if (!L->guard_on || L->admission_ceiling == 0) return {};  // best effort: nothing is evicted
  const size_t i = BudgetIndex(b);
  const uint64_t ceiling = L->admission_ceiling;
  const uint64_t target = std::min(L->soft_bytes == 0 ? ceiling : L->soft_bytes, ceiling);
  uint64_t pinned = 0;
  for (const auto& [id, s] : slots_) {
    if (s.get() != &head && s->state != SlotState::kUnloaded && s->pinned()) pinned += s->resident[i];
  }
  if (size > ceiling || pinned + size > ceiling) return {kNeverCost, 0};
  // As PlanAdmission goes: the victim ChooseVictim names, until the model fits.
  std::vector<VictimCandidate> cands = Candidates(b);
  uint64_t projected = std::max(m.device_active[i], committed_[i]) + size;
  Fit fit;
  while (projected > target) {
    const std::optional<size_t> v = ChooseVictim(cands, static_cast<int64_t>(projected - target), head.model.id);
    if (!v) break;
    projected = Sat(projected, cands[*v].freeable_bytes);
    fit.newest_victim = std::max(fit.newest_victim, cands[*v].last_access);
    cands.erase(cands.begin() + static_cast<std::ptrdiff_t>(*v));
    ++fit.evictions;
  }
  if (projected > ceiling) return {kWaitCost, 0};
  return fit;
}

int EnginePool::ChooseGpu(const Slot& head, uint64_t ticket, const MemorySnapshot& m, PoolError* error) const {
  // Settings' "cuda:N" names one GPU (a split model's first); "cuda" (or
  // none) lets the pool choose. A model split over `span` GPUs takes an
  // aligned run of them (0-1, 2-3, ...), its ranks on consecutive GPUs.
  std::optional<int> wanted;
  const std::optional<std::string>& device = head.settings.device;
  if (device && device->rfind("cuda:", 0) == 0) {
    if (auto d = ParseDevice(*device); d.ok()) wanted = d->index;
  }
  const int span = head.gpu_span();
  auto run_present = [&](size_t n) {
    for (int r = 0; r < span; ++r) {
      if (n + r >= m.devices.size() || !m.devices[n + r].present) return false;
    }
    return true;
  };
  std::vector<int> eligible;
  std::string served;
  for (size_t n = 0; n < m.devices.size(); ++n) {
    const DeviceBudgetSnapshot& d = m.devices[n];
    if (!d.present) continue;
    served += (served.empty() ? "cuda:" : ", cuda:") + std::to_string(d.cuda_index);
    if (n % static_cast<size_t>(span) != 0 || !run_present(n)) continue;
    if (!wanted || d.cuda_index == *wanted) eligible.push_back(static_cast<int>(n));
  }
  if (eligible.empty()) {
    // 409: the server cannot serve it as it is set up (the settings or --device say what to change).
    const std::string where = served.empty() ? std::string("no GPU") : served;
    *error = MakeError(PoolErrorCode::kUnavailable,
                       served.empty() && span == 1 ? "the model '" + head.model.id + "' needs GPU memory but no GPU was found"
                       : span > 1 ? "the model '" + head.model.id + "' is split over " + std::to_string(span) +
                                        " GPUs (tensor_parallel)" + (device ? " from " + *device : std::string()) +
                                        " but the server computes on " + where
                                  : "the model '" + head.model.id + "' asks for " + *device +
                                        " (its device setting) but the server computes on " + served);
    return -1;
  }
  if (evicted_for_ticket_ == ticket && head.planned_gpu >= 0 &&
      std::find(eligible.begin(), eligible.end(), head.planned_gpu) != eligible.end()) {
    return head.planned_gpu;  // the room made there is for this model
  }
  // Fewest evictions; then the least recently used victims (LRU across the
  // GPUs); then the most room left.
  const uint64_t size = head.estimate[BudgetIndex(Budget::kDevice)];  // each rank's, when split
  int best = -1;
  Fit best_fit;
  uint64_t best_room = 0;
  for (int n : eligible) {
    // A run of GPUs: the evictions on all of them, the newest victim, the least room.
    Fit fit;
    uint64_t room = UINT64_MAX;
    for (int r = 0; r < span; ++r) {
      const Budget b = GpuBudget(n + r);
      const size_t i = BudgetIndex(b);
      const Fit f = EvictionsToFit(head, b, size, m);
      fit.evictions = f.evictions >= kWaitCost || fit.evictions >= kWaitCost ? std::max(f.evictions, fit.evictions)
                                                                              : fit.evictions + f.evictions;
      fit.newest_victim = std::max(fit.newest_victim, f.newest_victim);
      const uint64_t used = std::max(m.device_active[i], committed_[i]);
      const uint64_t ceiling = m.devices[static_cast<size_t>(n + r)].limits.admission_ceiling;
      room = std::min(room, ceiling > used ? ceiling - used : 0);
    }
    const bool better =
        best < 0 || fit.evictions < best_fit.evictions ||
        (fit.evictions == best_fit.evictions &&
         (fit.newest_victim < best_fit.newest_victim || (fit.newest_victim == best_fit.newest_victim && room > best_room)));
    if (better) {
      best = n;
      best_fit = fit;
      best_room = room;
    }
  }
  if (eligible.size() > 1) {
    LOG_INFO("pool: placing " << head.model.id << " on " << BudgetLabel(GpuBudget(best)) << " ("
                              << (best_fit.evictions >= kWaitCost ? std::string("no GPU has room now")
                                                                  : std::to_string(best_fit.evictions) + " evictions")
                              << ", " << Mb(best_room) << " free of its ceiling)");
  }
  return best;
}

bool EnginePool::AdmitHead(Lock& lock, std::vector<Completion>* done) {
  if (loading_) return false;
  const Waiter* head = nullptr;
  std::shared_ptr<Slot> slot;
  for (const auto& [t, w] : waiters_) {
    std::shared_ptr<Slot> s = FindSlot(w.id);
    if (s && s->state == SlotState::kUnloaded && !s->load_failure && !s->pending_unload) {
      head = &w;
      slot = s;
      break;
    }
  }
  if (!head) {
    blocked_ticket_ = 0;
    return false;
  }
  const uint64_t ticket = head->ticket;
  // The admission and the load it starts are logged as the head's request's
  // work (LoadSlot unlocks: `head` may not outlive it, the copy does).
  ScopedRequestId scope(head->request_id);
  if (!ModelStillPresent(slot->model)) {
    slots_.erase(slot->model.id);  // rule 10: its waiters get NotFound
    return true;
  }
  AdmissionPlan plan = PlanAdmission(*slot, ticket);
  switch (plan.kind) {
    case Plan::kAdmit:
      blocked_ticket_ = 0;
      slot->resident = plan.size;
      slot->home = slot->on_gpu() ? GpuBudget(plan.gpu) : Budget::kHost;
      slot->span = slot->on_gpu() ? slot->gpu_span() : 1;
      slot->planned_gpu = -1;
      LoadSlot(lock, slot);
      return true;
    case Plan::kEvict:
      blocked_ticket_ = 0;
      evicted_for_ticket_ = ticket;
      slot->planned_gpu = slot->on_gpu() ? plan.gpu : -1;
      plan.victim->state = SlotState::kUnloading;
      UnloadMarked(lock, plan.victim, ("evicted to make room for " + slot->model.id).c_str());
      return true;
    case Plan::kWait:
      blocked_ticket_ = ticket;
      return false;
    case Plan::kNever:
      blocked_ticket_ = 0;
      slot->planned_gpu = -1;
      for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (it->second.id != slot->model.id) {
          ++it;
          continue;
        }
        done->emplace_back(std::move(it->second.done), AcquireResult{nullptr, plan.error});
        it = waiters_.erase(it);
      }
      return true;
  }
  return false;
}

void EnginePool::LoadSlot(Lock& lock, const std::shared_ptr<Slot>& slot) {
  slot->state = SlotState::kLoading;
  slot->abort_loading = false;
  for (size_t i = 0; i < committed_.size(); ++i) committed_[i] += slot->resident[i];
  loading_ = slot;
  const DiscoveredModel model = slot->model;
  const ModelSettings settings = slot->settings;
  const BudgetBytes active_before = DeviceActiveLocked();
  std::function<void()> wake = wake_hook_;
  lock.unlock();
  if (wake) wake();
  const uint64_t footprint_before = probe_->FootprintBytes();
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::unique_ptr<LoadedEngine>> r =
      factory_->Load(model, settings, slot->abort_loading, MakeKvBudget(slot),
                     slot->home == Budget::kHost ? -1 : options_.gpus[GpuOf(slot->home)].cuda_index);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t footprint_after = probe_->FootprintBytes();
  std::shared_ptr<LoadedEngine> engine;
  if (r.ok()) engine = std::move(*r);
  lock.lock();
  loading_ = nullptr;
  const bool replaced = stop_ || FindSlot(model.id) != slot;
  auto uncommit = [&] {
    for (size_t i = 0; i < committed_.size(); ++i) committed_[i] = Sat(committed_[i], slot->resident[i]);
    slot->resident = {};
    slot->measured = {};
    slot->kv_claimed = slot->kv_wanted = 0;
    slot->keep_alive_s.reset();
    slot->state = SlotState::kUnloaded;
  };
  if (!r.ok()) {
    uncommit();
    ++events_.load_failures;
    PoolError e;
    e.code = PoolErrorCode::kUnavailable;
    e.message = "the model '" + model.id + "' failed to load: " + r.status().message() +
                " (cached until the models are rediscovered)";
    slot->load_failure = e;
    LOG_ERROR("pool: " << e.message);
    lock.unlock();
    Reclaim();
    lock.lock();
  } else if (slot->abort_loading || replaced) {
    uncommit();
    const bool aborted = slot->abort_loading;
    lock.unlock();
    engine->Stop();
    engine.reset();
    lock.lock();
    PoolError e;
    e.code = aborted ? PoolErrorCode::kAborted : PoolErrorCode::kShutdown;
    e.message = aborted ? "load aborted: process memory limit exceeded"
                        : "the model '" + model.id + "' was removed while it loaded";
    e.retry_after_s = 5;
    LOG_WARN("pool: " << model.id << ": " << e.message);
    std::vector<Completion> failed;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->second.id != model.id) {
        ++it;
        continue;
      }
      failed.emplace_back(std::move(it->second.done), AcquireResult{nullptr, e});
      it = waiters_.erase(it);
    }
    lock.unlock();
    for (auto& [cb, res] : failed) cb(std::move(res));
    lock.lock();
  } else {
    slot->engine = engine;
    slot->state = SlotState::kLoaded;
    slot->runtime_key = settings.RuntimeKey();
    slot->loaded_at = slot->last_access = Now();
    ++events_.loads;
    events_.load_seconds += seconds;
    const BudgetBytes active_after = DeviceActiveLocked();
    slot->measured[0] = std::max(Sat(footprint_after, footprint_before), Sat(active_after[0], active_before[0]));
    for (size_t i = 1; i < slot->measured.size(); ++i) slot->measured[i] = Sat(active_after[i], active_before[i]);
    const double gb = static_cast<double>(model.weight_bytes) / static_cast<double>(kGiB);
    if (gb > 1e-3) {
      const double s_per_gb = seconds / gb;
      load_s_per_gb_ = load_s_per_gb_ == 0 ? s_per_gb : 0.7 * load_s_per_gb_ + 0.3 * s_per_gb;
    }
    LOG_INFO("pool: loaded " << model.id << " in " << static_cast<int64_t>(seconds * 1000) << " ms (resident "
                             << FormatBytes(TotalBytes(slot->resident)) << " in " << BudgetLabel(slot->home)
                             << ", measured growth "
                             << FormatBytes(slot->measured[0]) << ", committed " << FormatBytes(committed_[0])
                             << ")");
  }
  cv_.notify_all();
}

void EnginePool::UnloadMarked(Lock& lock, const std::shared_ptr<Slot>& slot, const char* why) {
  ++unloads_in_progress_;
  ++events_.unloads[UnloadCause(why)];
  const MemorySnapshot before_snap = SampleLocked();  // still counting this model
  std::shared_ptr<LoadedEngine> engine = std::move(slot->engine);
  BudgetBytes before{}, size{};
  for (size_t i = 0; i < before.size(); ++i) {
    before[i] = before_snap.Usage(static_cast<Budget>(i));
    size[i] = slot->freeable(static_cast<Budget>(i));
  }
  const std::string id = slot->model.id;
  const std::string reason = why;
  std::function<void()> wake = wake_hook_;
  lock.unlock();
  if (engine) {
    engine->Stop();
    engine.reset();  // the last reference: weights unmapped, buffers freed
  }
  SettleBarrier(size, before, slot.get());
  lock.lock();
  for (size_t i = 0; i < committed_.size(); ++i) committed_[i] = Sat(committed_[i], slot->resident[i]);
  slot->resident = {};
  slot->measured = {};
  slot->kv_claimed = slot->kv_wanted = 0;
  slot->keep_alive_s.reset();
  slot->state = SlotState::kUnloaded;
  slot->pending_unload = false;
  slot->reload_pending = false;
  --unloads_in_progress_;
  LOG_INFO("pool: unloaded " << id << " (" << reason << "); committed " << FormatBytes(committed_[0]));
  cv_.notify_all();
  if (wake) {
    lock.unlock();
    wake();
    lock.lock();
  }
}

void EnginePool::SettleBarrier(const BudgetBytes& size, const BudgetBytes& before, const Slot* unloaded) {
  // Expect the unloaded size back, less a tolerance (2 GiB, or 5 % of a large
  // model) — and never more than the live reading held before.
  BudgetBytes need{};
  for (size_t i = 0; i < need.size(); ++i) {
    const uint64_t tolerance = std::max<uint64_t>(2 * kGiB, size[i] / 20);
    need[i] = Sat(std::min(size[i], before[i]), tolerance);
  }
  auto live = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    BudgetBytes active = DeviceActiveLocked();
    active[0] = std::max(active[0], probe_->FootprintBytes());
    return active;
  };
  auto settled = [&](const BudgetBytes& now) {
    for (size_t i = 0; i < need.size(); ++i) {
      if (Sat(before[i], now[i]) < need[i]) return false;
    }
    return true;
  };
  for (int round = 0; round < options_.settle_rounds; ++round) {
    if (settled(live())) {
      if (round > 0) LOG_DEBUG("pool: memory settled after " << round << " rounds");
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (OtherActivity(unloaded)) {
        LOG_DEBUG("pool: settle barrier indeterminate: another model is serving or loading");
        return;
      }
    }
    clock_.sleep(options_.settle_interval_s);
  }
  for (int round = 0; round < options_.emergency_reclaim_rounds; ++round) {
    Reclaim();
    if (settled(live())) return;
  }
  const BudgetBytes now = live();
  LOG_ERROR("pool: memory did not settle after an unload: live " << FormatBytes(now[0]) << " (was "
                                                                 << FormatBytes(before[0]) << ", expected a drop of "
                                                                 << FormatBytes(need[0]) << ")");
}

void EnginePool::Reclaim() {
  std::vector<std::shared_ptr<LoadedEngine>> engines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : slots_) {
      if (s->engine) engines.push_back(s->engine);
    }
  }
  for (auto& e : engines) e->ReleaseCaches();
  malloc_trim(0);
}

}  // namespace llmhost
