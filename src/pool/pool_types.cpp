#include "pool/pool_types.h"

namespace llmhost {

const char* PoolErrorCodeName(PoolErrorCode code) {
  switch (code) {
    case PoolErrorCode::kOk: return "ok";
    case PoolErrorCode::kNotFound: return "model_not_found";
    case PoolErrorCode::kTooLarge: return "model_too_large";
    case PoolErrorCode::kInsufficientMemory: return "insufficient_memory";
    case PoolErrorCode::kBusy: return "model_busy";
    case PoolErrorCode::kLoading: return "model_loading";
    case PoolErrorCode::kUnloading: return "model_unloading";
    case PoolErrorCode::kUnavailable: return "model_unavailable";
    case PoolErrorCode::kTimeout: return "model_wait_timeout";
    case PoolErrorCode::kAborted: return "model_load_aborted";
    case PoolErrorCode::kCancelled: return "cancelled";
    case PoolErrorCode::kShutdown: return "server_shutting_down";
    case PoolErrorCode::kPrefillRejected: return "prefill_memory_exceeded";
    case PoolErrorCode::kInternal: return "internal_error";
  }
  return "internal_error";
}

const char* AbortReasonName(AbortReason r) {
  switch (r) {
    case AbortReason::kNone: return "none";
    case AbortReason::kModelUnloaded: return "model_unloaded";
    case AbortReason::kMemoryPressure: return "memory_pressure";
    case AbortReason::kShutdown: return "shutdown";
  }
  return "none";
}

const MemoryLimits* MemorySnapshot::Limits(Budget b) const {
  if (b == Budget::kHost) return &host;
  const int g = GpuOf(b);
  if (g < 0 || g >= static_cast<int>(devices.size()) || !devices[g].present) return nullptr;
  return &devices[g].limits;
}

uint64_t MemorySnapshot::Usage(Budget b) const {
  if (b == Budget::kHost) return usage;
  const int g = GpuOf(b);
  return g >= 0 && g < static_cast<int>(devices.size()) ? devices[g].usage : 0;
}

const DeviceBudgetSnapshot* MemorySnapshot::FirstDevice() const {
  for (const DeviceBudgetSnapshot& d : devices) {
    if (d.present) return &d;
  }
  return nullptr;
}

}  // namespace llmhost
