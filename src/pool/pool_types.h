// Value types of the engine pool's interface: errors (and the HTTP status
// each maps to, spec rule 24), status reports and memory figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pool/loaded_engine.h"
#include "pool/memory_limits.h"
#include "pool/victim_choice.h"

namespace llmhost {

enum class PoolErrorCode {
  kOk,
  kNotFound,            // 404 model_not_found
  kTooLarge,            // 507 model_too_large: bigger than the ceiling
  kInsufficientMemory,  // 507 insufficient_memory: can never fit beside what must stay
  kBusy,                // 409 model_busy / model_unloading
  kUnavailable,         // 409 model_unavailable: a cached load failure
  kTimeout,             // 503 model_wait_timeout (Retry-After)
  kAborted,             // 503 model_load_aborted (memory pressure during the load)
  kCancelled,           // the client went away while queued (nothing to answer)
  kShutdown,            // 503 the server is shutting down
  kPrefillRejected,     // 400 prefill_memory_exceeded
  kInternal,            // 500
};

struct PoolError {
  PoolErrorCode code = PoolErrorCode::kOk;
  std::string message;
  std::string api_code;     // machine-readable ("model_unloading"); "" → the default for `code`
  int retry_after_s = 0;    // > 0: a Retry-After header
  uint64_t estimated_bytes = 0, limit_bytes = 0;  // kPrefillRejected
  bool ok() const { return code == PoolErrorCode::kOk; }
};

int PoolErrorHttpStatus(PoolErrorCode code);
// api_code when set, else the code's default ("model_not_found", ...).
std::string PoolErrorApiCode(const PoolError& e);
const char* PoolErrorCodeName(PoolErrorCode code);

// Why the pool ended a request early.
enum class AbortReason {
  kNone,
  kModelUnloaded,   // manual unload (503 model_unloaded)
  kMemoryPressure,  // the enforcer (prefill_memory_aborted before the first token)
  kShutdown,
};
const char* AbortReasonName(AbortReason r);

enum class UnloadOutcome { kUnloaded, kPending };  // HTTP 200 / 202
struct UnloadResult {
  PoolError error;  // kNotFound (404), kBusy (409: loading; unload-if-idle: busy)
  UnloadOutcome outcome = UnloadOutcome::kUnloaded;
  bool ok() const { return error.ok(); }
};

struct ModelStatus {
  std::string id;
  std::optional<std::string> alias;
  std::string path;
  std::string type;  // model_type, or the override
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
};

struct MemorySnapshot {
  MemoryLimits host, device;
  bool has_device = false;
  uint64_t footprint = 0;
  uint64_t pss = 0;
  BudgetBytes device_active{};
  BudgetBytes committed{};
  uint64_t cache_bytes = 0;   // the KV block store's RAM (PoolOptions::cache_ram_bytes)
  uint64_t usage = 0;         // host: max(device_active, footprint)
  uint64_t device_usage = 0;  // device: device_active
  PressureLevel level = PressureLevel::kOk;  // the worse of both budgets
  bool admission_paused = false;
  SystemMemory system;
  std::vector<GpuMemory> gpus;
};

struct RequestCounts {
  int64_t active = 0;   // leases held
  int64_t waiting = 0;  // queued in the pool
  // The oldest queued model waits for memory that busy models hold.
  bool memory_blocked = false;
};

}  // namespace llmhost
