#include "pool/memory_limits.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace llmhost {

namespace {

constexpr uint64_t kSmallMachine = 24 * kGiB;
constexpr uint64_t kHotCacheSlack = 512 * kMiB;

uint64_t Scale(uint64_t bytes, double f) {
  const double v = static_cast<double>(bytes) * f;
  if (!(v > 0)) return 0;
  return v >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(v);
}

uint64_t MinNonZero(uint64_t a, uint64_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

}  // namespace

const char* GuardTierName(GuardTier t) {
  switch (t) {
    case GuardTier::kOff: return "off";
    case GuardTier::kSafe: return "safe";
    case GuardTier::kBalanced: return "balanced";
    case GuardTier::kAggressive: return "aggressive";
    case GuardTier::kCustom: return "custom";
  }
  return "balanced";
}

Result<GuardTier> ParseGuardTier(const std::string& text) {
  std::string s;
  for (char c : text) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (GuardTier t : {GuardTier::kOff, GuardTier::kSafe, GuardTier::kBalanced, GuardTier::kAggressive,
                      GuardTier::kCustom}) {
    if (s == GuardTierName(t)) return t;
  }
  return Status::InvalidArgument("'" + text + "' (expected off, safe, balanced, aggressive or custom)");
}

Status ValidateGuardSettings(const GuardSettings& s) {
  if (s.tier == GuardTier::kCustom && s.custom_ceiling_bytes == 0) {
    return Status::InvalidArgument("the custom memory guard tier needs a ceiling (--memory-guard-gb)");
  }
  auto bad = [](double t) { return !(t >= 0 && t <= 1); };
  if (bad(s.soft_threshold) || !(s.hard_threshold > 0 && s.hard_threshold <= 1)) {
    return Status::InvalidArgument("memory guard thresholds must be in (0, 1]");
  }
  return Status::OK();
}

uint64_t StaticReserve(GuardTier tier, uint64_t total) {
  uint64_t reserve;
  if (tier == GuardTier::kCustom) {
    reserve = 2 * kGiB;
  } else if (total < kSmallMachine) {
    reserve = 4 * kGiB;
  } else {
    reserve = tier == GuardTier::kSafe ? 8 * kGiB : tier == GuardTier::kAggressive ? 4 * kGiB : 6 * kGiB;
  }
  return std::min(reserve, total / 4);
}

double TierSoftThreshold(GuardTier tier) {
  switch (tier) {
    case GuardTier::kSafe: return 0.85;
    case GuardTier::kAggressive: return 0.925;
    case GuardTier::kCustom: return 0.85;
    default: return 0.90;
  }
}

double TierDynamicRatio(GuardTier tier) {
  switch (tier) {
    case GuardTier::kSafe: return 0.2;
    case GuardTier::kAggressive: return 0.8;
    default: return 0.5;
  }
}

MemoryLimits ComputeLimits(const GuardSettings& s, const LimitInputs& in) {
  MemoryLimits l;
  l.tier = s.tier;
  l.guard_on = s.guard_on();
  l.total = in.system.EffectiveTotal();
  l.static_ceiling = l.total - StaticReserve(s.tier, l.total);
  l.device_cap = in.device_cap;
  l.soft_threshold = s.soft_threshold > 0 ? s.soft_threshold : TierSoftThreshold(s.tier);
  l.hard_threshold = s.hard_threshold;
  l.prefill_safety = s.tier == GuardTier::kAggressive ? 0.925 : 0.90;
  l.abort_margin = s.tier == GuardTier::kAggressive || s.tier == GuardTier::kCustom ? 0.95 : 0.90;

  if (s.tier == GuardTier::kCustom) {
    l.dynamic_ceiling = s.custom_ceiling_bytes;
  } else if (in.system.ok) {
    const uint64_t swappable = std::min(in.system.swap_free, in.system.inactive_anon);
    l.dynamic_ceiling =
        in.footprint + in.system.EffectiveAvailable() + Scale(swappable, TierDynamicRatio(s.tier));
  } else {
    l.dynamic_ceiling = l.static_ceiling;
  }

  // The binding component: the smallest; ties go to the static ceiling.
  uint64_t hard = l.static_ceiling;
  l.binding = CeilingSource::kStatic;
  if (l.dynamic_ceiling != 0 && l.dynamic_ceiling < hard) {
    hard = l.dynamic_ceiling;
    l.binding = s.tier == GuardTier::kCustom ? CeilingSource::kCustom : CeilingSource::kDynamic;
  }
  if (l.device_cap != 0 && l.device_cap < hard) {
    hard = l.device_cap;
    l.binding = CeilingSource::kDevice;
  }
  if (l.total == 0) {  // nothing readable: only the user's ceiling can bind
    hard = s.tier == GuardTier::kCustom ? s.custom_ceiling_bytes : 0;
  }
  l.abort_limit = MinNonZero(l.static_ceiling, l.device_cap);
  if (s.tier == GuardTier::kCustom) l.abort_limit = MinNonZero(l.abort_limit, s.custom_ceiling_bytes);

  l.hard_ceiling = l.guard_on ? hard : 0;
  l.admission_ceiling = l.guard_on ? l.hard_ceiling : MinNonZero(l.static_ceiling, l.device_cap);
  l.soft_bytes = Scale(l.admission_ceiling, l.soft_threshold);
  l.hard_bytes = Scale(l.admission_ceiling, l.hard_threshold);
  l.hot_cache_reservation = std::min(in.hot_cache_max, in.hot_cache_used + kHotCacheSlack);
  const uint64_t watermark = l.admission_ceiling > l.hot_cache_reservation
                                 ? l.admission_ceiling - l.hot_cache_reservation
                                 : 1;
  l.prefill_limit = std::max<uint64_t>(1, Scale(watermark, l.prefill_safety));
  return l;
}

MemoryLimits ComputeDeviceLimits(const GuardSettings& s, const GpuMemory& gpu, uint64_t device_active) {
  MemoryLimits l;
  l.tier = s.tier == GuardTier::kCustom ? GuardTier::kBalanced : s.tier;
  l.guard_on = s.guard_on();
  if (gpu.total_bytes == 0) return l;
  l.total = gpu.total_bytes;
  const uint64_t reserve = std::max<uint64_t>(512 * kMiB, gpu.total_bytes / 20);
  l.static_ceiling = gpu.total_bytes > reserve ? gpu.total_bytes - reserve : 0;
  if (s.gpu_ceiling_bytes > 0) l.static_ceiling = std::min(l.static_ceiling, s.gpu_ceiling_bytes);
  l.dynamic_ceiling = device_active + gpu.free_bytes;
  l.device_cap = gpu.total_bytes;
  l.soft_threshold = s.soft_threshold > 0 ? s.soft_threshold : TierSoftThreshold(s.tier);
  l.hard_threshold = s.hard_threshold;
  l.prefill_safety = s.tier == GuardTier::kAggressive ? 0.925 : 0.90;
  l.abort_margin = s.tier == GuardTier::kAggressive || s.tier == GuardTier::kCustom ? 0.95 : 0.90;
  uint64_t hard = l.static_ceiling;
  l.binding = CeilingSource::kDevice;
  if (l.dynamic_ceiling < hard) {
    hard = l.dynamic_ceiling;
    l.binding = CeilingSource::kDynamic;
  }
  l.abort_limit = l.static_ceiling;
  l.hard_ceiling = l.guard_on ? hard : 0;
  l.admission_ceiling = l.guard_on ? hard : l.static_ceiling;
  l.soft_bytes = Scale(l.admission_ceiling, l.soft_threshold);
  l.hard_bytes = Scale(l.admission_ceiling, l.hard_threshold);
  l.prefill_limit = std::max<uint64_t>(1, Scale(l.admission_ceiling, l.prefill_safety));
  return l;
}

std::string MemoryLimits::Describe() const {
  switch (binding) {
    case CeilingSource::kStatic:
      return "the static ceiling (" + FormatBytes(static_ceiling) + " = " + FormatBytes(total) +
             " of memory minus the " + GuardTierName(tier) + " tier's reserve)";
    case CeilingSource::kDynamic:
      return "the dynamic ceiling (" + FormatBytes(dynamic_ceiling) +
             " = this process plus the memory the system has available)";
    case CeilingSource::kCustom:
      return "the custom ceiling (" + FormatBytes(dynamic_ceiling) + ", --memory-guard-gb)";
    case CeilingSource::kDevice:
      return "the device memory (" + FormatBytes(admission_ceiling != 0 ? admission_ceiling : device_cap) +
             " of " + FormatBytes(device_cap) + ")";
  }
  return "";
}

std::string MemoryLimits::Advice() const {
  if (!guard_on) return "free memory or load a smaller model";
  switch (binding) {
    case CeilingSource::kStatic:
      return "choose a tier with a smaller reserve (--memory-guard aggressive) or a smaller model";
    case CeilingSource::kDynamic:
      return "close other programs or raise the tier (--memory-guard aggressive)";
    case CeilingSource::kCustom: return "raise the custom ceiling (--memory-guard-gb)";
    case CeilingSource::kDevice: return "the GPU cannot hold more: use a smaller or more quantized model";
  }
  return "";
}

const char* PressureLevelName(PressureLevel l) {
  switch (l) {
    case PressureLevel::kOk: return "ok";
    case PressureLevel::kSoft: return "soft";
    case PressureLevel::kHard: return "hard";
  }
  return "ok";
}

PressureLevel LevelFor(uint64_t usage, const MemoryLimits& l) {
  if (!l.guard_on || l.admission_ceiling == 0) return PressureLevel::kOk;
  if (usage <= l.soft_bytes) return PressureLevel::kOk;
  if (usage <= l.hard_bytes) return PressureLevel::kSoft;
  return PressureLevel::kHard;
}

std::string FormatBytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= kGiB) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(kGiB));
  } else if (bytes >= kMiB) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / static_cast<double>(kMiB));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

}  // namespace llmhost
