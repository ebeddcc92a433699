// EnginePool::DeleteModel: refuses a model in use or pinned, unloads an idle
// loaded one, forgets it (so no request can load it again meanwhile), then
// removes its files outside the lock and rediscovers.
#include <chrono>
#include <thread>

#include "pool/engine_pool_internal.h"
#include "util/log.h"

namespace llmhost {

namespace {

// A request whose client already has the whole answer may still hold its
// lease, and count among the engine's running requests, for a moment: both
// are let go just after the last bytes go out (on the connection's thread and
// the executor's). A delete sent right after such an answer waits this long
// for them before it calls the model busy.
constexpr auto kServingGrace = std::chrono::seconds(2);

PoolError Refused(const std::string& id, const std::string& why) {
  PoolError e;
  e.code = PoolErrorCode::kBusy;
  e.message = "the model '" + id + "' is " + why + ": not deleted";
  return e;
}

}  // namespace

bool EnginePool::ServingWithin(const std::string& name, std::chrono::steady_clock::duration grace) {
  const auto until = std::chrono::steady_clock::now() + grace;
  for (;;) {
    {
      Lock lock(mu_);
      std::optional<std::string> id = ResolveLocked(name);
      std::shared_ptr<Slot> s = id ? FindSlot(*id) : nullptr;
      if (!s || (s->in_use == 0 && IsQuiescent(*s))) return false;
    }
    if (std::chrono::steady_clock::now() >= until) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

DeleteResult EnginePool::DeleteModel(const std::string& name) {
  DeleteResult out;
  ServingWithin(name, kServingGrace);  // then refused below if it still serves
  // Why the slot cannot be deleted now ("" when it can).
  auto refusal = [this](const Slot& s) -> std::string {
    if (s.settings.pinned) return "pinned (unpin it first)";
    if (s.state == SlotState::kLoading || s.state == SlotState::kUnloading) return SlotStateName(s.state);
    if (s.in_use > 0 || !IsQuiescent(s)) return "serving requests (unload it first, or wait)";
    for (const auto& [ticket, w] : waiters_) {
      if (w.id == s.model.id) return "awaited by queued requests";
    }
    return "";
  };
  DiscoveredModel model;
  {
    Lock lock(mu_);
    std::optional<std::string> id = ResolveLocked(name);
    std::shared_ptr<Slot> s = id ? FindSlot(*id) : nullptr;
    if (!s) {
      out.error.code = PoolErrorCode::kNotFound;
      out.error.message = UnknownModelMessage(name);
      return out;
    }
    out.id = *id;
    if (std::string why = refusal(*s); !why.empty()) {
      out.error = Refused(*id, why);
      return out;
    }
    if (s->state == SlotState::kLoaded) {
      s->state = SlotState::kUnloading;
      UnloadMarked(lock, s, "manual unload before deleting");
      // The lock was let go while unloading: look again.
      s = FindSlot(*id);
      if (!s) {
        out.error.code = PoolErrorCode::kNotFound;
        out.error.message = UnknownModelMessage(name);
        return out;
      }
      if (std::string why = refusal(*s); !why.empty() || s->state != SlotState::kUnloaded) {
        out.error = Refused(*id, why.empty() ? SlotStateName(s->state) : why);
        return out;
      }
    }
    model = s->model;
    slots_.erase(*id);
  }
  Result<ModelRemoval> removed = RemoveModelFiles(model);
  Rediscover();  // whatever could not be removed is served again
  if (!removed.ok()) {
    const StatusCode code = removed.status().code();
    out.error.code = code == StatusCode::kInvalidArgument ? PoolErrorCode::kBusy
                     : code == StatusCode::kNotFound      ? PoolErrorCode::kNotFound
                                                          : PoolErrorCode::kInternal;
    out.error.message = removed.status().message();
    LOG_WARN("pool: deleting " << out.id << ": " << out.error.message);
    return out;
  }
  out.removal = std::move(*removed);
  LOG_INFO("pool: deleted " << out.id << " (" << FormatBytes(out.removal.bytes) << ")");
  return out;
}

}  // namespace llmhost
