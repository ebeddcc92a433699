// Memory guard ceilings (spec section 2, rules 2–6, 10, 12): static ceiling by
// memory size and tier, dynamic ceiling ratios and fallbacks, hard limit =
// min of components, admission ceiling rules, levels, refusal advice.
#include "pool/memory_limits.h"

#include <gtest/gtest.h>

namespace llmhost::memory_limits_test {
namespace {

constexpr uint64_t G = kGiB;

SystemMemory Sys(uint64_t total, uint64_t available, uint64_t swap_free = 0, uint64_t inactive_anon = 0) {
  SystemMemory s;
  s.mem_total = total;
  s.mem_available = available;
  s.swap_free = swap_free;
  s.inactive_anon = inactive_anon;
  s.ok = true;
  return s;
}

MemoryLimits Limits(GuardTier tier, SystemMemory sys, uint64_t footprint = 0, uint64_t custom = 0,
                    uint64_t device_cap = 0) {
  GuardSettings g;
  g.tier = tier;
  g.custom_ceiling_bytes = custom;
  LimitInputs in;
  in.system = sys;
  in.footprint = footprint;
  in.device_cap = device_cap;
  return ComputeLimits(g, in);
}

TEST(MemoryLimits, StaticCeilingByMemorySizeAndTier) {
  // Below 24 GiB: 4 GiB for every tier (at most a quarter of the total).
  for (GuardTier t : {GuardTier::kSafe, GuardTier::kBalanced, GuardTier::kAggressive}) {
    EXPECT_EQ(Limits(t, Sys(16 * G, 16 * G)).static_ceiling, 12 * G) << GuardTierName(t);
    EXPECT_EQ(Limits(t, Sys(20 * G, 20 * G)).static_ceiling, 16 * G) << GuardTierName(t);
    EXPECT_EQ(Limits(t, Sys(8 * G, 8 * G)).static_ceiling, 6 * G) << GuardTierName(t);
  }
  // 24 GiB and more: safe 8, balanced 6, aggressive 4 GiB.
  EXPECT_EQ(Limits(GuardTier::kSafe, Sys(64 * G, 64 * G)).static_ceiling, 56 * G);
  EXPECT_EQ(Limits(GuardTier::kBalanced, Sys(64 * G, 64 * G)).static_ceiling, 58 * G);
  EXPECT_EQ(Limits(GuardTier::kAggressive, Sys(64 * G, 64 * G)).static_ceiling, 60 * G);
  EXPECT_EQ(Limits(GuardTier::kCustom, Sys(64 * G, 64 * G), 0, 10 * G).static_ceiling, 62 * G);
  // A cgroup limit lowers the total.
  SystemMemory s = Sys(64 * G, 64 * G);
  s.cgroup_limit = 16 * G;
  EXPECT_EQ(Limits(GuardTier::kBalanced, s).total, 16 * G);
  EXPECT_EQ(Limits(GuardTier::kBalanced, s).static_ceiling, 12 * G);
}

TEST(MemoryLimits, DynamicCeilingRatiosAndFallbacks) {
  const SystemMemory s = Sys(64 * G, 10 * G, /*swap_free=*/8 * G, /*inactive_anon=*/4 * G);
  // footprint + available + ratio × min(swap free, inactive anon)
  EXPECT_EQ(Limits(GuardTier::kSafe, s, 2 * G).dynamic_ceiling, 12 * G + static_cast<uint64_t>(0.2 * 4 * G));
  EXPECT_EQ(Limits(GuardTier::kBalanced, s, 2 * G).dynamic_ceiling, 14 * G);
  EXPECT_EQ(Limits(GuardTier::kAggressive, s, 2 * G).dynamic_ceiling,
            12 * G + static_cast<uint64_t>(0.8 * 4 * G));
  // No swap: footprint + available.
  EXPECT_EQ(Limits(GuardTier::kBalanced, Sys(64 * G, 10 * G), 2 * G).dynamic_ceiling, 12 * G);
  // /proc/meminfo unreadable: the static ceiling.
  SystemMemory unread = Sys(64 * G, 0);
  unread.ok = false;
  const MemoryLimits l = Limits(GuardTier::kBalanced, unread);
  EXPECT_EQ(l.dynamic_ceiling, l.static_ceiling);
  // Custom: the user's ceiling.
  EXPECT_EQ(Limits(GuardTier::kCustom, s, 0, 5 * G).dynamic_ceiling, 5 * G);
}

TEST(MemoryLimits, HardCeilingIsTheMinimumOfItsComponents) {
  MemoryLimits l = Limits(GuardTier::kBalanced, Sys(64 * G, 64 * G));
  EXPECT_EQ(l.hard_ceiling, 58 * G);  // static < dynamic
  EXPECT_EQ(l.binding, CeilingSource::kStatic);
  l = Limits(GuardTier::kBalanced, Sys(64 * G, 20 * G), 4 * G);
  EXPECT_EQ(l.hard_ceiling, 24 * G);  // dynamic
  EXPECT_EQ(l.binding, CeilingSource::kDynamic);
  l = Limits(GuardTier::kBalanced, Sys(64 * G, 64 * G), 0, 0, 40 * G);
  EXPECT_EQ(l.hard_ceiling, 40 * G);  // device cap
  EXPECT_EQ(l.binding, CeilingSource::kDevice);
  EXPECT_EQ(l.abort_limit, 40 * G);
  l = Limits(GuardTier::kCustom, Sys(64 * G, 64 * G), 0, 10 * G);
  EXPECT_EQ(l.hard_ceiling, 10 * G);
  EXPECT_EQ(l.binding, CeilingSource::kCustom);
  EXPECT_EQ(l.abort_limit, 10 * G);
  // A custom ceiling above the static one (total − 2 GiB) is capped by it.
  l = Limits(GuardTier::kCustom, Sys(16 * G, 16 * G), 0, 100 * G);
  EXPECT_EQ(l.hard_ceiling, 14 * G);
}

TEST(MemoryLimits, AdmissionCeilingAndThresholds) {
  MemoryLimits on = Limits(GuardTier::kBalanced, Sys(64 * G, 20 * G), 4 * G);
  EXPECT_TRUE(on.guard_on);
  EXPECT_EQ(on.admission_ceiling, on.hard_ceiling);
  EXPECT_EQ(on.soft_bytes, static_cast<uint64_t>(0.90 * static_cast<double>(24 * G)));
  EXPECT_EQ(on.hard_bytes, static_cast<uint64_t>(0.95 * static_cast<double>(24 * G)));
  MemoryLimits off = Limits(GuardTier::kOff, Sys(64 * G, 20 * G), 4 * G);
  EXPECT_FALSE(off.guard_on);
  EXPECT_EQ(off.hard_ceiling, 0u);
  EXPECT_EQ(off.admission_ceiling, off.static_ceiling);  // best effort against the static ceiling
  EXPECT_DOUBLE_EQ(TierSoftThreshold(GuardTier::kSafe), 0.85);
  EXPECT_DOUBLE_EQ(TierSoftThreshold(GuardTier::kBalanced), 0.90);
  EXPECT_DOUBLE_EQ(TierSoftThreshold(GuardTier::kAggressive), 0.925);
  EXPECT_DOUBLE_EQ(TierSoftThreshold(GuardTier::kCustom), 0.85);
  EXPECT_DOUBLE_EQ(Limits(GuardTier::kAggressive, Sys(64 * G, 64 * G)).prefill_safety, 0.925);
  EXPECT_DOUBLE_EQ(Limits(GuardTier::kBalanced, Sys(64 * G, 64 * G)).abort_margin, 0.90);
  EXPECT_DOUBLE_EQ(Limits(GuardTier::kCustom, Sys(64 * G, 64 * G), 0, G).abort_margin, 0.95);
  // An explicit soft threshold wins over the tier's.
  GuardSettings g;
  g.soft_threshold = 0.5;
  LimitInputs in;
  in.system = Sys(64 * G, 64 * G);
  EXPECT_EQ(ComputeLimits(g, in).soft_bytes, 29 * G);
}

TEST(MemoryLimits, PrefillLimitLeavesRoomForTheHotCache) {
  GuardSettings g;
  g.tier = GuardTier::kCustom;
  g.custom_ceiling_bytes = 10 * G;
  LimitInputs in;
  in.system = Sys(64 * G, 64 * G);
  EXPECT_EQ(ComputeLimits(g, in).prefill_limit, 9 * G);
  in.hot_cache_max = 4 * G;
  in.hot_cache_used = G / 2;  // reservation = min(max, used + 512 MiB) = 1 GiB
  EXPECT_EQ(ComputeLimits(g, in).hot_cache_reservation, G);
  EXPECT_EQ(ComputeLimits(g, in).prefill_limit, static_cast<uint64_t>(0.9 * static_cast<double>(9 * G)));
}

TEST(MemoryLimits, LevelsAreOkSoftHard) {
  MemoryLimits l = Limits(GuardTier::kCustom, Sys(64 * G, 64 * G), 0, 10 * G);
  EXPECT_EQ(LevelFor(0, l), PressureLevel::kOk);
  EXPECT_EQ(LevelFor(l.soft_bytes, l), PressureLevel::kOk);  // at the limit: no action
  EXPECT_EQ(LevelFor(l.soft_bytes + 1, l), PressureLevel::kSoft);
  EXPECT_EQ(LevelFor(l.hard_bytes, l), PressureLevel::kSoft);
  EXPECT_EQ(LevelFor(l.hard_bytes + 1, l), PressureLevel::kHard);
  EXPECT_EQ(LevelFor(100 * G, Limits(GuardTier::kOff, Sys(64 * G, 64 * G))), PressureLevel::kOk);
}

TEST(MemoryLimits, AdviceNamesTheBindingCeiling) {
  EXPECT_NE(Limits(GuardTier::kBalanced, Sys(64 * G, 20 * G), 4 * G).Advice().find("close other programs"),
            std::string::npos);
  EXPECT_NE(Limits(GuardTier::kCustom, Sys(64 * G, 64 * G), 0, G).Advice().find("--memory-guard-gb"),
            std::string::npos);
  EXPECT_NE(Limits(GuardTier::kCustom, Sys(64 * G, 64 * G), 0, G).Describe().find("custom ceiling"),
            std::string::npos);
  EXPECT_NE(Limits(GuardTier::kBalanced, Sys(64 * G, 64 * G)).Describe().find("static ceiling"),
            std::string::npos);
  EXPECT_NE(Limits(GuardTier::kBalanced, Sys(64 * G, 64 * G), 0, 0, G).Describe().find("device memory"),
            std::string::npos);
}

TEST(MemoryLimits, DeviceBudgetOfAGpu) {
  GuardSettings g;
  GpuMemory gpu{0, "H200", 140 * G, 100 * G, 40 * G, {}};
  MemoryLimits d = ComputeDeviceLimits(g, gpu, /*device_active=*/30 * G);
  EXPECT_EQ(d.static_ceiling, 133 * G);  // total − 5 %
  EXPECT_EQ(d.dynamic_ceiling, 130 * G);  // what llmhost holds + free
  EXPECT_EQ(d.hard_ceiling, 130 * G);
  EXPECT_EQ(d.binding, CeilingSource::kDynamic);
  EXPECT_EQ(ComputeDeviceLimits(g, GpuMemory{}, 0).admission_ceiling, 0u);
}

TEST(MemoryLimits, ParsesTiersAndValidates) {
  EXPECT_EQ(*ParseGuardTier("Balanced"), GuardTier::kBalanced);
  EXPECT_EQ(*ParseGuardTier("off"), GuardTier::kOff);
  EXPECT_FALSE(ParseGuardTier("huge").ok());
  GuardSettings g;
  g.tier = GuardTier::kCustom;
  EXPECT_FALSE(ValidateGuardSettings(g).ok());  // custom needs a ceiling
  g.custom_ceiling_bytes = G;
  EXPECT_TRUE(ValidateGuardSettings(g).ok());
  g.hard_threshold = 1.5;
  EXPECT_FALSE(ValidateGuardSettings(g).ok());
  EXPECT_EQ(FormatBytes(3 * G / 2), "1.50 GiB");
  EXPECT_EQ(FormatBytes(512 * kMiB), "512.0 MiB");
}

}  // namespace
}  // namespace llmhost::memory_limits_test
