// MemoryEnforcer: watches the process's memory and acts before the kernel
// does. One thread polls the pool's readings (memory_probe.h) at an adaptive
// rate and, per poll:
//
//   1. expires idle models past their TTL (rule 21);
//   2. computes the level: ok below the soft watermark, soft below the hard
//      watermark, hard above (usage = max(device-active, footprint));
//   3. at soft: unloads drained pending-unload models and evicts idle LRU
//      models while more than one unpinned model is loaded;
//      at hard, while usage > soft: shrink the hot cache toward soft, unload
//      drained pending models, evict an idle LRU victim, else abort the
//      requests of the least recently used busy unpinned model (kept loaded;
//      in an emergency it is also marked for unload), else abort a load in
//      progress, else (emergency) abort every request of every model, pinned
//      too, else reclaim (engines' caches, malloc_trim). After an abort the
//      poll ends: memory drains as requests end;
//   4. admission pause: new requests wait in the pool's queue at hard
//      pressure, and at soft pressure while this poll could free memory (a
//      model that only fits above the soft target is never starved by it).
//
// Emergency: usage ≥ ceiling + 2 GiB, or usage ≥ ceiling on 2 polls in a row.
// Polling: every 1 s while requests run, a model loads or memory is under
// pressure (and for 10 s after Wake()); 10 s with idle models loaded; 30 s
// with nothing loaded. With the guard off nothing is enforced (TTL still is).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pool/engine_pool.h"

namespace llmhost {

struct EnforcerOptions {
  // Shrinks the hot KV cache toward `target_bytes` of usage; returns true if
  // it freed anything. Unset: no hot cache.
  std::function<bool(uint64_t target_bytes)> shrink_hot_cache;
  // Told the pressure level on every poll (the KV store saves write-through
  // above kOk). Unset: nobody.
  std::function<void(PressureLevel)> on_level;
  double fast_after_wake_s = 10;
  double active_interval_s = 1;
  double idle_interval_s = 10;
  double empty_interval_s = 30;
};

struct EnforcerTick {
  PressureLevel level = PressureLevel::kOk;
  bool emergency = false;
  bool paused = false;
  uint64_t usage = 0;
  std::vector<std::string> actions;  // "ttl", "shrink_hot_cache", "unload_pending", "evict", "abort_busy",
                                     // "abort_loading", "abort_all", "reclaim"
};

class MemoryEnforcer {
 public:
  MemoryEnforcer(EnginePool* pool, EnforcerOptions options = {});
  ~MemoryEnforcer();  // Stop()
  MemoryEnforcer(const MemoryEnforcer&) = delete;
  MemoryEnforcer& operator=(const MemoryEnforcer&) = delete;

  // Starts the polling thread (and hooks pool wake-ups to Wake()).
  void Start();
  // Stops the thread and unhooks the pool; once: later calls (and the
  // destructor) do not touch the pool, which may be gone by then.
  void Stop();
  // Polls now and at the fast rate for a while.
  void Wake();

  // One poll (the thread's body; tests call it directly).
  EnforcerTick CheckAndEnforce();
  // The interval the thread sleeps after a poll, from the current state.
  double PollInterval(PressureLevel level) const;
  EnforcerTick last_tick() const;

 private:
  void Loop();

  EnginePool* pool_;
  EnforcerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool stopped_ = false;  // Stop() ran: the pool is not touched again
  bool woken_ = false;
  std::chrono::steady_clock::time_point fast_until_{};
  bool over_ceiling_last_ = false;
  EnforcerTick last_;
  std::thread thread_;
};

}  // namespace llmhost
