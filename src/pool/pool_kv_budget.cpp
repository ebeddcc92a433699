// EnginePool: the KV growth of loaded engines. An engine's admission priced
// its KV cache's floor; every block beyond is claimed here, counted in the
// committed bytes like a model's resident size, and granted under the same
// rule as an admission: below the soft target at once; above it only when no
// idle model could make room (the manager then evicts one, and the engine,
// which retries, gets the memory next time); never above the ceiling.
#include <algorithm>

#include "pool/engine_pool_internal.h"
#include "util/log.h"

namespace llmhost {

namespace {

uint64_t Sat(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

class SlotKvBudget final : public KvBudget {
 public:
  SlotKvBudget(EnginePool* pool, std::weak_ptr<EnginePool::Slot> slot) : pool_(pool), slot_(std::move(slot)) {}
  bool Claim(uint64_t bytes) override {
    auto s = slot_.lock();
    return s && pool_->ClaimKv(s, bytes);
  }
  void Return(uint64_t bytes) override {
    if (auto s = slot_.lock()) pool_->ReturnKv(s, bytes);
  }

 private:
  EnginePool* pool_;
  std::weak_ptr<EnginePool::Slot> slot_;
};

std::shared_ptr<KvBudget> EnginePool::MakeKvBudget(const std::shared_ptr<Slot>& slot) {
  return std::make_shared<SlotKvBudget>(this, slot);
}

bool EnginePool::ClaimKv(const std::shared_ptr<Slot>& slot, uint64_t bytes) {
  Lock lock(mu_);
  if (stop_ || (slot->state != SlotState::kLoaded && slot->state != SlotState::kLoading)) return false;
  const int span = slot->kv_span();
  if (span > 1) return ClaimSplitKv(lock, slot, bytes);
  const Budget b = slot->kv_budget();
  const size_t i = static_cast<size_t>(b);
  auto grant = [&] {
    slot->kv_claimed += bytes;
    slot->resident[i] += bytes;
    committed_[i] += bytes;
    return true;
  };
  const bool host = b == Budget::kHost;
  // The host reading is cheap (VmRSS); a GPU's comes from NVML.
  MemorySnapshot m = host ? SampleHostLocked() : SampleRssLocked();
  const MemoryLimits* L = m.Limits(b);
  if (!L) return grant();  // no reading of the GPU: its allocator has the last word
  if (!L->guard_on || L->admission_ceiling == 0) return grant();
  const uint64_t ceiling = L->admission_ceiling;
  const uint64_t target = std::min(L->soft_bytes == 0 ? ceiling : L->soft_bytes, ceiling);
  auto current = [&] {
    return host ? std::max({m.device_active[0], m.footprint, committed_[0] + m.cache_bytes})
                : std::max(m.device_active[i], committed_[i]);
  };
  uint64_t projected = current() + bytes;
  if (projected <= target) return grant();
  if (host && m.cache_bytes > 0 && options_.shrink_cache) {
    // The block store's RAM gives way first (it is a cache).
    const uint64_t excess = projected - target;
    if (options_.shrink_cache(m.cache_bytes > excess ? m.cache_bytes - excess : 0) > 0) {
      m = SampleHostLocked();
      projected = current() + bytes;
      if (projected <= target) return grant();
    }
  }
  // An idle model could make room: the manager evicts it; the engine retries.
  const std::vector<VictimCandidate> cands = Candidates(b);
  if (ChooseVictim(cands, static_cast<int64_t>(projected - target), slot->model.id)) {
    slot->kv_wanted = std::max(slot->kv_wanted, projected - target);
    slot->kv_wanted_in = b;
    cv_.notify_all();
    return false;
  }
  if (projected <= ceiling) return grant();  // above the soft target: nothing left to evict
  return false;
}

bool EnginePool::ClaimSplitKv(Lock&, const std::shared_ptr<Slot>& slot, uint64_t bytes) {
  // A split model's cache grows by the same share on each of its GPUs, each
  // under the rule of an admission: below the soft target at once; above it
  // only when no idle model there could make room (the manager evicts it and
  // the engine retries); never above a ceiling.
  const int span = slot->kv_span();
  const uint64_t share = (bytes + static_cast<uint64_t>(span) - 1) / static_cast<uint64_t>(span);
  MemorySnapshot m = SampleRssLocked();  // on the executor: no page-table walk
  for (int r = 0; r < span; ++r) {
    const Budget b = static_cast<Budget>(static_cast<int>(slot->kv_budget()) + r);
    const size_t i = static_cast<size_t>(b);
    const MemoryLimits* L = m.Limits(b);
    if (!L || !L->guard_on || L->admission_ceiling == 0) continue;
    const uint64_t ceiling = L->admission_ceiling;
    const uint64_t target = std::min(L->soft_bytes == 0 ? ceiling : L->soft_bytes, ceiling);
    const uint64_t projected = std::max(m.device_active[i], committed_[i]) + share;
    if (projected <= target) continue;
    if (ChooseVictim(Candidates(b), static_cast<int64_t>(projected - target), slot->model.id)) {
      slot->kv_wanted = std::max(slot->kv_wanted, projected - target);
      slot->kv_wanted_in = b;
      cv_.notify_all();
      return false;
    }
    if (projected > ceiling) return false;
  }
  slot->kv_claimed += share * static_cast<uint64_t>(span);
  for (int r = 0; r < span; ++r) {
    const size_t i = static_cast<size_t>(slot->kv_budget()) + static_cast<size_t>(r);
    slot->resident[i] += share;
    committed_[i] += share;
  }
  return true;
}

void EnginePool::ReturnKv(const std::shared_ptr<Slot>& slot, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t span = static_cast<uint64_t>(slot->kv_span());
  const uint64_t n = std::min(bytes, slot->kv_claimed);  // nothing after an unload settled the slot
  slot->kv_claimed -= n;
  for (uint64_t r = 0; r < span; ++r) {
    const size_t i = static_cast<size_t>(slot->kv_budget()) + static_cast<size_t>(r);
    const uint64_t share = n / span + (r < n % span ? 1 : 0);
    slot->resident[i] = Sat(slot->resident[i], share);
    committed_[i] = Sat(committed_[i], share);
  }
}

bool EnginePool::MakeRoomForKv(Lock& lock) {
  for (auto& [id, s] : slots_) {
    if (s->kv_wanted == 0) continue;
    const uint64_t want = s->kv_wanted;
    s->kv_wanted = 0;
    if (s->state != SlotState::kLoaded) continue;
    const std::vector<VictimCandidate> cands = Candidates(s->kv_wanted_in);
    if (auto v = ChooseVictim(cands, static_cast<int64_t>(want), id)) {
      std::shared_ptr<Slot> victim = FindSlot(cands[*v].id);
      LOG_INFO("pool: evicting " << victim->model.id << " for the KV cache of " << id << " (" << (want >> 20)
                                 << " MiB wanted)");
      victim->state = SlotState::kUnloading;
      UnloadMarked(lock, victim, "KV memory for another model");
      return true;
    }
  }
  return false;
}

}  // namespace llmhost
