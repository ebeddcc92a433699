// Per-model counters and gauges of the tiered store (TierStats, keyed by
// BlockMeta::model). Thread-safe; its mutex is a leaf (taken under the
// tiers' locks, never the other way round).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "kv/tiered_block_store.h"

namespace llmhost {

class TierStatsBook {
 public:
  using Field = uint64_t TierStats::*;
  // Adds `delta` (may be negative for gauges) to one field of `model`'s stats.
  void Add(const std::string& model, Field field, int64_t delta = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    by_model_[model.empty() ? kUnknown : model].*field += static_cast<uint64_t>(delta);
  }
  std::map<std::string, TierStats> ByModel() const {
    std::lock_guard<std::mutex> lock(mu_);
    return by_model_;
  }
  // The sum over every model.
  TierStats Total() const {
    std::lock_guard<std::mutex> lock(mu_);
    TierStats t;
    for (const auto& [model, s] : by_model_) {
      for (Field f : kSummed) t.*f += s.*f;
    }
    return t;
  }

  static constexpr const char* kUnknown = "(unknown)";  // files whose header is unreadable

 private:
  static constexpr Field kSummed[] = {
      &TierStats::saves,          &TierStats::duplicate_saves, &TierStats::loads,
      &TierStats::hits,           &TierStats::misses,          &TierStats::errors,
      &TierStats::hot_hits,       &TierStats::hot_evictions,   &TierStats::hot_promotions,
      &TierStats::pending_hits,   &TierStats::ssd_hits,        &TierStats::ssd_writes,
      &TierStats::ssd_evictions,  &TierStats::inline_writes,   &TierStats::dropped_saves,
      &TierStats::hot_bytes,      &TierStats::hot_blocks,      &TierStats::pending_bytes,
      &TierStats::pending_blocks, &TierStats::ssd_bytes,       &TierStats::ssd_files,
  };
  mutable std::mutex mu_;
  std::map<std::string, TierStats> by_model_;
};

}  // namespace llmhost
