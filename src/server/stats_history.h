// The dashboard's charts over the last hour (GET /admin/api/history): a
// reading of the server's cumulative counters and memory every few seconds
// (--stats-interval), turned into per-interval rates and kept in a ring
// sized for an hour, so memory stays bounded however long the server runs.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace llmhost::server {

// One memory budget (the host, or a GPU) at a moment.
struct BudgetReading {
  std::string name;  // "Host", "GPU 0"
  uint64_t usage_bytes = 0, committed_bytes = 0, ceiling_bytes = 0;
};

// What the server has counted since it started, and its memory now.
struct StatsReading {
  double steady_s = 0;  // a monotonic clock, for the rates
  int64_t unix_ms = 0;  // wall time, for the charts' axis
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t ttft_count = 0;   // generations that produced a first token
  double ttft_sum_s = 0;    // and the sum of their times to it
  std::vector<BudgetReading> budgets;
};

// One point of the charts: the interval ending at unix_ms.
struct StatsSample {
  int64_t unix_ms = 0;
  double prompt_tps = 0, generated_tps = 0;
  std::optional<double> ttft_mean_s;  // none: no first token in the interval
  std::vector<BudgetReading> budgets;
};

class StatsHistory {
 public:
  // Keeps the samples of `window_s` seconds at one per `interval_s`.
  StatsHistory(int interval_s, int window_s = 3600);

  int interval_s() const { return interval_s_; }
  // Whether a reading is due at `steady_s` (the first one always is).
  bool Due(double steady_s) const;
  // The first reading only sets the baseline; each later one adds a sample
  // for the time since the one before, dropping the oldest past capacity.
  void Record(const StatsReading& reading);
  std::vector<StatsSample> Samples() const;

 private:
  const int interval_s_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::optional<StatsReading> last_;  // guarded by mu_
  std::deque<StatsSample> samples_;   // oldest first; guarded by mu_
};

}  // namespace llmhost::server
