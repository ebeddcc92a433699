// Value types of the engine pool's interface: errors (causes; the server maps
// them to HTTP, server/pool_errors.h), status reports and memory figures.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pool/loaded_engine.h"
#include "pool/memory_limits.h"
#include "pool/victim_choice.h"

namespace llmhost {

// Why the pool refused or ended something.
enum class PoolErrorCode {
  kOk,
  kNotFound,            // no such model
  kTooLarge,            // bigger than the ceiling
  kInsufficientMemory,  // can never fit beside what must stay
  kBusy,                // in use (an unload-if-idle, a settings change)
  kLoading,             // still loading (an unload)
  kUnloading,           // being unloaded (a request for it)
  kUnavailable,         // a cached load failure
  kTimeout,             // a queued request waited past its limit
  kAborted,             // the load was aborted (memory pressure during the load)
  kCancelled,           // the client went away while queued (nothing to answer)
  kShutdown,            // the server is shutting down
  kPrefillRejected,     // the prompt cannot fit in memory even alone
  kInternal,
};

struct PoolError {
  PoolErrorCode code = PoolErrorCode::kOk;
  std::string message;
  int retry_after_s = 0;    // > 0: worth retrying after this many seconds
  uint64_t estimated_bytes = 0, limit_bytes = 0;  // kPrefillRejected
  bool ok() const { return code == PoolErrorCode::kOk; }
};

// "model_not_found", "model_too_large", ...: for logs, and the API's error
// codes (server/pool_errors.h).
const char* PoolErrorCodeName(PoolErrorCode code);

// Why the pool ended a request early.
enum class AbortReason {
  kNone,
  kModelUnloaded,   // manual unload
  kMemoryPressure,  // the enforcer (prefill_memory_aborted before the first token)
  kShutdown,
};
const char* AbortReasonName(AbortReason r);

enum class UnloadOutcome { kUnloaded, kPending };  // done / once the model's requests end
struct UnloadResult {
  PoolError error;  // kNotFound, kLoading, kBusy (unload-if-idle)
  UnloadOutcome outcome = UnloadOutcome::kUnloaded;
  bool ok() const { return error.ok(); }
};

struct ModelStatus {
  std::string id;
  std::optional<std::string> alias;
  std::string path;
  std::string type;  // model_type, or the override
  // What it serves: an encoder by its files, any other model by its settings.
  ModelKind kind = ModelKind::kChat;
  bool loaded = false, loading = false, pinned = false, pending_unload = false;
  bool is_default = false, hidden = false;
  uint64_t memory_bytes = 0;     // committed resident bytes when loaded (0 unloaded)
  uint64_t estimated_bytes = 0;  // the admission size
  uint64_t weight_bytes = 0;
  std::optional<double> last_access;  // unix seconds
  std::optional<int64_t> ttl_seconds; // effective (per model, else global)
  int64_t active_requests = 0;        // leases held
  int64_t waiting_requests = 0;       // queued in the pool for it
  std::optional<int64_t> max_context_window;
  std::optional<std::string> load_error;  // a cached load failure
  std::optional<int> gpu;                 // loaded on a GPU: CUDA's number of it
};

// One GPU's budget in a snapshot.
struct DeviceBudgetSnapshot {
  int cuda_index = 0;    // CUDA's number of the GPU (--device cuda:N)
  bool present = false;  // its memory was read (else no model is admitted there)
  int gpu = -1;          // GpuMemory::index of its readings
  MemoryLimits limits;
  uint64_t usage = 0;    // device_active there
};

struct MemorySnapshot {
  MemoryLimits host;
  std::vector<DeviceBudgetSnapshot> devices;  // PoolOptions::gpus, in order
  uint64_t footprint = 0;
  uint64_t pss = 0;
  BudgetBytes device_active{};
  BudgetBytes committed{};
  uint64_t cache_bytes = 0;   // the KV block store's RAM (PoolOptions::cache_ram_bytes)
  uint64_t usage = 0;         // host: max(device_active, footprint)
  PressureLevel level = PressureLevel::kOk;  // the worst of every budget
  Budget worst = Budget::kHost;              // the budget at that level (the host on a tie)
  bool admission_paused = false;
  SystemMemory system;
  std::vector<GpuMemory> gpus;

  // The limits of budget `b`; null for a GPU without readings.
  const MemoryLimits* Limits(Budget b) const;
  // The live usage of budget `b` (host: max(device_active, footprint)).
  uint64_t Usage(Budget b) const;
  // The first GPU budget with readings; null when none.
  const DeviceBudgetSnapshot* FirstDevice() const;
};

// What the pool did since it started (the metrics' counters).
struct PoolEvents {
  uint64_t loads = 0, load_failures = 0;
  double load_seconds = 0;                   // over the successful loads
  std::map<std::string, uint64_t> unloads;  // by cause (UnloadCause)
};

// The cause an unload's reason names: evicted_for_load, evicted_for_kv,
// idle_ttl, memory_pressure, requested (an API call), other.
std::string UnloadCause(std::string_view why);

struct RequestCounts {
  int64_t active = 0;   // leases held
  int64_t waiting = 0;  // queued in the pool
  // The oldest queued model waits for memory that busy models hold.
  bool memory_blocked = false;
};

}  // namespace llmhost
