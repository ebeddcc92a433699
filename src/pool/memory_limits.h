// Memory guard settings and the ceilings computed from them.
//
// Tiers (--memory-guard): off, safe, balanced (default), aggressive, custom.
//
//   total          = min(MemTotal, cgroup limit)
//   static ceiling = total − reserve
//                    reserve, total < 24 GiB: 4 GiB for every tier
//                                 ≥ 24 GiB: safe 8, balanced 6, aggressive 4 GiB
//                    custom: 2 GiB; never more than a quarter of total
//                    (so a small machine or container keeps ¾ of its memory usable)
//   dynamic        = footprint + available + ratio × min(SwapFree, Inactive(anon))
//                    (ratio safe 0.2, balanced 0.5, aggressive 0.8: how much of
//                    other programs' idle memory the tier is willing to push to
//                    swap); falls back to the static ceiling when
//                    /proc/meminfo is unreadable. Custom: the user's ceiling.
//   hard ceiling   = min(static, dynamic, device cap); 0 when the guard is off
//   abort limit    = min(static, device cap, custom ceiling)
//   admission      = hard ceiling (guard on) or static ceiling (off: best effort)
//   soft target    = admission × soft threshold (safe 0.85, balanced 0.90,
//                    aggressive 0.925, custom 0.85); hard = admission × 0.95
//   prefill limit  = (admission − hot-cache reservation) × prefill safety
//                    (0.90; aggressive 0.925)
//
// Levels: ok up to the soft bytes, soft up to the hard bytes, hard above.
#pragma once

#include <cstdint>
#include <string>

#include "pool/memory_probe.h"
#include "util/status.h"

namespace llmhost {

inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;

enum class GuardTier { kOff, kSafe, kBalanced, kAggressive, kCustom };

const char* GuardTierName(GuardTier t);
// "off|safe|balanced|aggressive|custom" (case-insensitive); InvalidArgument otherwise.
Result<GuardTier> ParseGuardTier(const std::string& text);

struct GuardSettings {
  GuardTier tier = GuardTier::kBalanced;
  uint64_t custom_ceiling_bytes = 0;  // the custom tier's ceiling (> 0)
  bool prefill_guard = true;          // independent of the tier
  double soft_threshold = 0;          // 0: the tier's
  double hard_threshold = 0.95;
  uint64_t gpu_ceiling_bytes = 0;     // > 0: the GPU's ceiling (--gpu-memory-guard-gb), under its memory
  bool guard_on() const { return tier != GuardTier::kOff; }
};

// InvalidArgument when custom has no ceiling or a threshold is outside (0, 1].
Status ValidateGuardSettings(const GuardSettings& s);

// Which component sets the hard ceiling (for refusal advice).
enum class CeilingSource { kStatic, kDynamic, kCustom, kDevice };

struct MemoryLimits {
  bool guard_on = true;
  GuardTier tier = GuardTier::kBalanced;
  uint64_t total = 0;
  uint64_t static_ceiling = 0;
  uint64_t dynamic_ceiling = 0;
  uint64_t device_cap = 0;  // 0: none
  uint64_t hard_ceiling = 0;  // 0 when the guard is off
  uint64_t abort_limit = 0;
  uint64_t admission_ceiling = 0;
  uint64_t soft_bytes = 0;  // admission soft target
  uint64_t hard_bytes = 0;  // hard watermark
  uint64_t hot_cache_reservation = 0;
  uint64_t prefill_limit = 0;
  double soft_threshold = 0.9;
  double hard_threshold = 0.95;
  double prefill_safety = 0.9;
  double abort_margin = 0.9;
  CeilingSource binding = CeilingSource::kStatic;

  // "the dynamic ceiling (...)": what to do about it, for refusal messages.
  std::string Describe() const;
  std::string Advice() const;
};

struct LimitInputs {
  SystemMemory system;
  uint64_t footprint = 0;
  uint64_t device_cap = 0;  // 0: none
  uint64_t hot_cache_max = 0, hot_cache_used = 0;
};

MemoryLimits ComputeLimits(const GuardSettings& settings, const LimitInputs& in);

// The device budget of one GPU (its own ceiling, separate from host memory):
// static = total − max(512 MiB, 5 % of total), dynamic = what llmhost holds
// there + free, device cap = total; static no higher than
// settings.gpu_ceiling_bytes when set. The custom tier's ceiling is a host
// ceiling and does not apply here. All zero when `gpu.total_bytes` is 0.
MemoryLimits ComputeDeviceLimits(const GuardSettings& settings, const GpuMemory& gpu,
                                 uint64_t device_active);

// Static reserve of a tier for a total (see above).
uint64_t StaticReserve(GuardTier tier, uint64_t total);
double TierSoftThreshold(GuardTier tier);
double TierDynamicRatio(GuardTier tier);

enum class PressureLevel { kOk, kSoft, kHard };
const char* PressureLevelName(PressureLevel l);
PressureLevel LevelFor(uint64_t usage, const MemoryLimits& limits);

// "1.5 GiB", "512 MiB", "12 KiB", "7 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace llmhost
