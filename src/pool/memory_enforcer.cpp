#include "pool/memory_enforcer.h"

#include "util/log.h"

namespace llmhost {

namespace {

constexpr uint64_t kEmergencyMargin = 2 * kGiB;
constexpr int kMaxActionsPerPoll = 16;

}  // namespace

MemoryEnforcer::MemoryEnforcer(EnginePool* pool, EnforcerOptions options)
    : pool_(pool), options_(std::move(options)) {}

MemoryEnforcer::~MemoryEnforcer() { Stop(); }

void MemoryEnforcer::Start() {
  pool_->SetWakeHook([this] { Wake(); });
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopped_) return;
  thread_ = std::thread([this] { Loop(); });
}

void MemoryEnforcer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;  // the pool may be gone after the first Stop()
    stopped_ = stop_ = true;
  }
  pool_->SetWakeHook(nullptr);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MemoryEnforcer::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
    fast_until_ = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(options_.fast_after_wake_s));
  }
  cv_.notify_all();
}

EnforcerTick MemoryEnforcer::last_tick() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

double MemoryEnforcer::PollInterval(PressureLevel level) const {
  bool fast;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fast = std::chrono::steady_clock::now() < fast_until_;
  }
  if (fast || level != PressureLevel::kOk || pool_->HasActivity()) return options_.active_interval_s;
  return pool_->LoadedCount() > 0 ? options_.idle_interval_s : options_.empty_interval_s;
}

void MemoryEnforcer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    const EnforcerTick t = CheckAndEnforce();
    const double interval = PollInterval(t.level);
    lock.lock();
    woken_ = false;
    cv_.wait_for(lock, std::chrono::duration<double>(interval), [&] { return stop_ || woken_; });
  }
}

EnforcerTick MemoryEnforcer::CheckAndEnforce() {
  EnforcerTick t;
  if (pool_->ExpireIdle() > 0) t.actions.push_back("ttl");
  MemorySnapshot m = pool_->SampleRss();
  const MemoryLimits& L = m.host;
  t.usage = m.usage;
  t.level = m.level;
  if (options_.on_level) options_.on_level(m.level);
  if (!L.guard_on) {
    pool_->SetAdmissionPaused(false);
    std::lock_guard<std::mutex> lock(mu_);
    over_ceiling_last_ = false;
    last_ = t;
    return t;
  }
  const uint64_t ceiling = L.admission_ceiling;
  const bool over = ceiling > 0 && m.usage >= ceiling;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t.emergency = ceiling > 0 && (m.usage >= ceiling + kEmergencyMargin || (over && over_ceiling_last_));
    over_ceiling_last_ = over;
  }
  bool acted = false;
  auto resample = [&] {
    m = pool_->SampleRss();
    t.usage = m.usage;
  };
  auto over_soft = [&] { return m.usage > L.soft_bytes || m.level != PressureLevel::kOk; };
  if (t.level == PressureLevel::kHard) {
    LOG_WARN("memory: hard pressure: usage " << FormatBytes(m.usage) << " (footprint " << FormatBytes(m.footprint)
                                             << ", device-active " << FormatBytes(m.device_active[0])
                                             << ") above " << FormatBytes(L.hard_bytes) << " of "
                                             << FormatBytes(ceiling) << (t.emergency ? " (emergency)" : ""));
    if (options_.shrink_hot_cache && options_.shrink_hot_cache(L.soft_bytes)) {
      t.actions.push_back("shrink_hot_cache");
      acted = true;
      resample();
    }
    for (int i = 0; i < kMaxActionsPerPoll && over_soft(); ++i) {
      if (pool_->UnloadDrainedPending()) {
        t.actions.push_back("unload_pending");
      } else if (pool_->EvictIdle(false, "", 0, m.worst)) {
        t.actions.push_back("evict");
      } else if (pool_->AbortLruBusy(t.emergency)) {
        t.actions.push_back("abort_busy");
        acted = true;
        break;  // memory drains as the aborted requests end
      } else if (pool_->AbortLoading()) {
        t.actions.push_back("abort_loading");
        acted = true;
        break;
      } else if (t.emergency && pool_->AbortAllRequests()) {
        t.actions.push_back("abort_all");
        acted = true;
        break;
      } else {
        pool_->Reclaim();
        t.actions.push_back("reclaim");
        break;
      }
      acted = true;
      resample();
    }
  } else if (t.level == PressureLevel::kSoft) {
    for (int i = 0; i < kMaxActionsPerPoll && over_soft(); ++i) {
      if (pool_->UnloadDrainedPending()) {
        t.actions.push_back("unload_pending");
      } else if (pool_->EvictIdle(true, "", 0, m.worst)) {
        t.actions.push_back("evict");
      } else {
        break;
      }
      acted = true;
      resample();
    }
  }
  // Re-read the level after the actions for the pause decision.
  const PressureLevel after = m.level;
  t.paused = after == PressureLevel::kHard || (after == PressureLevel::kSoft && acted);
  pool_->SetAdmissionPaused(t.paused);
  if (!t.actions.empty()) {
    std::string list;
    for (const auto& a : t.actions) list += (list.empty() ? "" : ",") + a;
    LOG_INFO("memory: level " << PressureLevelName(t.level) << " → " << PressureLevelName(after) << ", usage "
                              << FormatBytes(m.usage) << ", actions " << list);
  }
  t.level = after;
  std::lock_guard<std::mutex> lock(mu_);
  last_ = t;
  return t;
}

}  // namespace llmhost
