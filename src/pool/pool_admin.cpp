// EnginePool: admin actions (load, unload, settings, discovery), status,
// and the actions the memory enforcer takes (TTL, eviction, aborts).
#include <algorithm>

#include "pool/embedding_loader.h"
#include "pool/engine_pool_internal.h"
#include "util/log.h"

namespace llmhost {

namespace {

PoolError MakeError(PoolErrorCode code, std::string message) {
  PoolError e;
  e.code = code;
  e.message = std::move(message);
  return e;
}

using AbortBlocks = std::vector<std::shared_ptr<ModelLease::AbortBlock>>;

void FireAll(const AbortBlocks& blocks, AbortReason reason) {
  for (const auto& b : blocks) b->Fire(reason);
}

}  // namespace

void EnginePool::AbortSlotLeases(Slot& s, AbortReason, AbortBlocks* fire) {
  fire->insert(fire->end(), s.leases.begin(), s.leases.end());
}

// ---- admin ------------------------------------------------------------------------

PoolError EnginePool::Load(const std::string& id, double timeout_s) {
  AcquireResult r = Acquire(id, timeout_s);
  return r.ok() ? PoolError() : r.error;
}

UnloadResult EnginePool::Unload(const std::string& name) {
  UnloadResult out;
  AbortBlocks fire;
  {
    Lock lock(mu_);
    std::optional<std::string> id = ResolveLocked(name);
    std::shared_ptr<Slot> s = id ? FindSlot(*id) : nullptr;
    if (!s) {
      out.error = MakeError(PoolErrorCode::kNotFound, UnknownModelMessage(name));
      return out;
    }
    switch (s->state) {
      case SlotState::kUnloaded: return out;  // nothing to do
      case SlotState::kLoading:
        out.error = MakeError(PoolErrorCode::kLoading, "the model '" + *id + "' is still loading");
        return out;
      case SlotState::kUnloading:
        out.outcome = UnloadOutcome::kPending;
        return out;
      case SlotState::kLoaded: break;
    }
    if (IsQuiescent(*s)) {
      s->state = SlotState::kUnloading;
      UnloadMarked(lock, s, "manual unload");
      return out;
    }
    // Busy: abort its requests, unload once they have drained (even if pinned).
    s->pending_unload = true;
    AbortSlotLeases(*s, AbortReason::kModelUnloaded, &fire);
    out.outcome = UnloadOutcome::kPending;
    LOG_INFO("pool: unload of " << *id << " pending: aborting " << s->in_use << " requests");
  }
  FireAll(fire, AbortReason::kModelUnloaded);
  cv_.notify_all();
  return out;
}

PoolError EnginePool::UnloadIfIdle(const std::string& name) {
  Lock lock(mu_);
  std::optional<std::string> id = ResolveLocked(name);
  std::shared_ptr<Slot> s = id ? FindSlot(*id) : nullptr;
  if (!s) return MakeError(PoolErrorCode::kNotFound, UnknownModelMessage(name));
  if (s->state == SlotState::kUnloaded) return PoolError();
  std::string why;
  if (s->settings.pinned) {
    why = "pinned";
  } else if (s->state != SlotState::kLoaded) {
    why = SlotStateName(s->state);
  } else if (s->in_use > 0) {
    why = "serving " + std::to_string(s->in_use) + " requests";
  } else if (!IsQuiescent(*s)) {
    why = "busy";
  }
  if (!why.empty()) return MakeError(PoolErrorCode::kBusy, "the model '" + *id + "' is " + why);
  s->state = SlotState::kUnloading;
  UnloadMarked(lock, s, "unload-if-idle");
  return PoolError();
}

Result<ModelSettings> EnginePool::Settings(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<std::string> id = ResolveLocked(name);
  if (!id) return Status::NotFound(UnknownModelMessage(name));
  return FindSlot(*id)->settings;
}

Result<ModelSettings> EnginePool::UpdateSettings(const std::string& name, const nlohmann::json& patch) {
  std::string id;
  DiscoveredModel model;
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<std::string> r = ResolveLocked(name);
    if (!r) return Status::NotFound(UnknownModelMessage(name));
    id = *r;
    model = FindSlot(id)->model;
    for (const auto& [other, s] : slots_) ids.push_back(other);
  }
  ASSIGN_OR_RETURN(ModelSettings settings, store_->Patch(id, patch, ids));
  const BudgetBytes estimate = factory_->ResidentEstimate(model, settings);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::shared_ptr<Slot> s = FindSlot(id)) {
      s->settings = settings;
      // The next admission's price (a loaded model keeps what its admission
      // committed, and the GPUs it was placed on, until it unloads).
      s->estimate = estimate;
      if ((s->state == SlotState::kLoaded || s->state == SlotState::kLoading) &&
          s->runtime_key != settings.RuntimeKey()) {
        s->reload_pending = true;  // applied once it drains (the manager unloads; the next request reloads)
        LOG_INFO("pool: " << id << ": runtime settings changed; reloading once idle");
      }
    }
  }
  cv_.notify_all();
  return settings;
}

Result<ModelSettings> EnginePool::SetPinned(const std::string& id, bool pinned) {
  return UpdateSettings(id, nlohmann::json{{"pinned", pinned}});
}

void EnginePool::Rediscover() {
  std::vector<DiscoveredModel> found = DiscoverModels(options_.model_dirs);
  const std::map<std::string, ModelSettings> settings = store_->All();
  std::vector<BudgetBytes> estimates;
  for (const DiscoveredModel& m : found) {
    auto it = settings.find(m.id);
    estimates.push_back(factory_->ResidentEstimate(m, it == settings.end() ? ModelSettings() : it->second));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, std::shared_ptr<Slot>> next;
    for (size_t i = 0; i < found.size(); ++i) {
      const DiscoveredModel& m = found[i];
      auto st = settings.find(m.id);
      const ModelSettings ms = st == settings.end() ? ModelSettings() : st->second;
      std::shared_ptr<Slot> old = FindSlot(m.id);
      if (old && old->state != SlotState::kUnloaded) {
        old->settings.pinned = ms.pinned;  // rule 4: a live entry keeps its object
        next[m.id] = old;
        continue;
      }
      auto s = std::make_shared<Slot>();
      s->model = m;
      s->settings = ms;
      s->estimate = estimates[i];
      if (old) s->last_access = old->last_access;
      next[m.id] = s;
    }
    for (auto& [id, old] : slots_) {
      if (!next.count(id) && old->state != SlotState::kUnloaded) next[id] = old;  // vanished but live
    }
    slots_.swap(next);
    for (const auto& [id, s] : settings) {
      if (s.pinned && !slots_.count(id)) LOG_WARN("models: pinned model '" << id << "' was not found");
    }
  }
  cv_.notify_all();
}

void EnginePool::PreloadPinned() {
  std::vector<std::string> pinned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : slots_) {
      if (s->settings.pinned) pinned.push_back(id);
    }
  }
  for (const std::string& id : pinned) {
    PoolError e = Load(id);
    if (e.ok()) {
      LOG_INFO("pool: preloaded pinned model " << id);
    } else {
      LOG_WARN("pool: could not preload pinned model " << id << ": " << e.message);
    }
  }
}

// ---- status -----------------------------------------------------------------------

std::vector<ModelStatus> EnginePool::ModelStatuses() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelStatus> out;
  for (const auto& [id, s] : slots_) {
    ModelStatus m;
    m.id = id;
    m.alias = s->settings.alias;
    m.path = s->model.path;
    m.type = s->settings.model_type_override ? *s->settings.model_type_override : s->model.model_type;
    m.kind = ServesKind(s->model, s->settings);
    m.loaded = s->state == SlotState::kLoaded;
    m.loading = s->state == SlotState::kLoading;
    m.pinned = s->settings.pinned;
    m.pending_unload = s->pending_unload || s->state == SlotState::kUnloading;
    m.is_default = s->settings.is_default;
    m.hidden = s->settings.hidden;
    if (m.loaded) {
      for (size_t i = 0; i < s->resident.size(); ++i) m.memory_bytes += s->freeable(static_cast<Budget>(i));
      if (s->home != Budget::kHost) m.gpu = options_.gpus[GpuOf(s->home)].cuda_index;
    }
    m.estimated_bytes = s->estimate[0] + s->estimate[1];
    m.weight_bytes = s->model.weight_bytes;
    if (s->last_access > 0) m.last_access = s->last_access;
    m.ttl_seconds = IdleTtl(*s);
    m.active_requests = s->in_use;
    for (const auto& [t, w] : waiters_) m.waiting_requests += w.id == id ? 1 : 0;
    if (s->engine && m.loaded) {
      m.max_context_window = s->engine->context_length();
    } else if (s->settings.max_context_window) {
      m.max_context_window = s->model.context_length > 0
                                 ? std::min(*s->settings.max_context_window, s->model.context_length)
                                 : *s->settings.max_context_window;
    } else if (s->model.context_length > 0) {
      m.max_context_window = s->model.context_length;
    }
    if (s->load_failure) m.load_error = s->load_failure->message;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<DiscoveredModel> EnginePool::Models() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DiscoveredModel> out;
  for (const auto& [id, s] : slots_) out.push_back(s->model);
  return out;
}

std::shared_ptr<ServedModel> EnginePool::Peek(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Slot> s = FindSlot(id);
  return s && s->state == SlotState::kLoaded && s->engine ? s->engine->served() : nullptr;
}

double EnginePool::load_seconds_per_gb() const {
  std::lock_guard<std::mutex> lock(mu_);
  return load_s_per_gb_;
}

// ---- enforcer actions ---------------------------------------------------------------

void EnginePool::SetAdmissionPaused(bool paused) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (paused_ == paused) return;
    paused_ = paused;
  }
  LOG_INFO("pool: admission " << (paused ? "paused (memory pressure)" : "resumed"));
  cv_.notify_all();
}

bool EnginePool::admission_paused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return paused_;
}

bool EnginePool::HasActivity() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (loading_ || !waiters_.empty() || unloads_in_progress_ > 0) return true;
  for (const auto& [id, s] : slots_) {
    if (s->state == SlotState::kLoaded && !IsQuiescent(*s)) return true;
  }
  return false;
}

size_t EnginePool::LoadedCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, s] : slots_) n += s->state == SlotState::kLoaded ? 1 : 0;
  return n;
}

bool EnginePool::UnloadDrainedPending() {
  Lock lock(mu_);
  for (auto& [id, s] : slots_) {
    if (s->state == SlotState::kLoaded && s->pending_unload && IsQuiescent(*s)) {
      std::shared_ptr<Slot> slot = s;
      slot->state = SlotState::kUnloading;
      UnloadMarked(lock, slot, "pending unload, drained (memory pressure)");
      return true;
    }
  }
  return false;
}

bool EnginePool::EvictIdle(bool only_if_several_unpinned, const std::string& exclude_id, int64_t bytes_needed,
                           Budget budget) {
  Lock lock(mu_);
  if (only_if_several_unpinned) {
    int unpinned = 0;
    for (const auto& [id, s] : slots_) unpinned += s->state == SlotState::kLoaded && !s->pinned() ? 1 : 0;
    if (unpinned < 2) return false;
  }
  const std::vector<VictimCandidate> cands = Candidates(budget);
  std::optional<size_t> v = ChooseVictim(cands, bytes_needed, exclude_id);
  if (!v) return false;
  std::shared_ptr<Slot> slot = FindSlot(cands[*v].id);
  slot->state = SlotState::kUnloading;
  UnloadMarked(lock, slot, "memory pressure");
  return true;
}

bool EnginePool::AbortLruBusy(bool mark_pending_unload) {
  AbortBlocks fire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Slot> lru;
    for (const auto& [id, s] : slots_) {
      if (s->state != SlotState::kLoaded || s->pinned() || s->leases.empty()) continue;
      if (!lru || s->last_access < lru->last_access) lru = s;
    }
    if (!lru) return false;
    AbortSlotLeases(*lru, AbortReason::kMemoryPressure, &fire);
    if (mark_pending_unload) lru->pending_unload = true;
    LOG_WARN("pool: memory pressure: aborting " << fire.size() << " requests of " << lru->model.id
                                                << (mark_pending_unload ? " (emergency: it unloads once drained)" : ""));
  }
  FireAll(fire, AbortReason::kMemoryPressure);
  return true;
}

bool EnginePool::AbortLoading() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!loading_ || loading_->abort_loading) return false;
  loading_->abort_loading = true;
  LOG_WARN("pool: memory pressure: aborting the load of " << loading_->model.id);
  return true;
}

bool EnginePool::AbortAllRequests() {
  AbortBlocks fire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, s] : slots_) AbortSlotLeases(*s, AbortReason::kMemoryPressure, &fire);
  }
  if (fire.empty()) return false;
  LOG_ERROR("pool: memory emergency: aborting all " << fire.size() << " requests");
  FireAll(fire, AbortReason::kMemoryPressure);
  return true;
}

std::string UnloadCause(std::string_view why) {
  if (why.starts_with("evicted")) return "evicted_for_load";
  if (why.starts_with("idle TTL")) return "idle_ttl";
  if (why.starts_with("KV memory")) return "evicted_for_kv";
  if (why.find("memory pressure") != std::string_view::npos) return "memory_pressure";
  if (why.starts_with("manual") || why.starts_with("unload-if-idle")) return "requested";
  return "other";
}

PoolEvents EnginePool::Events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::optional<int64_t> EnginePool::IdleTtl(const Slot& s) const {
  if (s.keep_alive_s) {
    if (*s.keep_alive_s < 0) return std::nullopt;
    return static_cast<int64_t>(*s.keep_alive_s);
  }
  return s.settings.ttl_seconds ? s.settings.ttl_seconds : options_.idle_ttl_s;
}

PoolError EnginePool::SetKeepAlive(const std::string& name, std::optional<double> seconds) {
  Lock lock(mu_);
  std::optional<std::string> id = ResolveLocked(name);
  std::shared_ptr<Slot> s = id ? FindSlot(*id) : nullptr;
  if (!s) return MakeError(PoolErrorCode::kNotFound, UnknownModelMessage(name));
  if (s->state == SlotState::kUnloaded) return PoolError();  // it applies to a load only
  s->keep_alive_s = seconds;
  return PoolError();
}

int EnginePool::ExpireIdle() {
  int unloaded = 0;
  for (;;) {
    Lock lock(mu_);
    const double now = Now();
    std::shared_ptr<Slot> victim;
    for (auto& [id, s] : slots_) {
      if (s->state != SlotState::kLoaded || s->pinned()) continue;
      const std::optional<int64_t> ttl = IdleTtl(*s);
      if (!ttl) continue;
      if (now - s->last_access < static_cast<double>(*ttl)) continue;
      if (IsQuiescent(*s)) {
        victim = s;
        break;
      }
      s->last_access = now;  // busy: its idle time starts when it drains
    }
    if (!victim) break;
    victim->state = SlotState::kUnloading;
    UnloadMarked(lock, victim, "idle TTL expired");
    ++unloaded;
  }
  return unloaded;
}

}  // namespace llmhost
