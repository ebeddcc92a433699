#include "server/stats_history.h"

#include <algorithm>

namespace llmhost::server {

StatsHistory::StatsHistory(int interval_s, int window_s)
    : interval_s_(std::max(1, interval_s)),
      capacity_(static_cast<size_t>(std::max(1, window_s / std::max(1, interval_s)))) {}

bool StatsHistory::Due(double steady_s) const {
  std::lock_guard<std::mutex> lock(mu_);
  // A little slack, so a ticker that wakes a hair early does not skip a beat.
  return !last_ || steady_s - last_->steady_s >= interval_s_ - 0.05;
}

void StatsHistory::Record(const StatsReading& reading) {
  std::lock_guard<std::mutex> lock(mu_);
  if (last_ && reading.steady_s > last_->steady_s) {
    const double dt = reading.steady_s - last_->steady_s;
    StatsSample s;
    s.unix_ms = reading.unix_ms;
    // Counters only grow; max() guards the rates should one ever be reset.
    s.prompt_tps = std::max<int64_t>(0, reading.prompt_tokens - last_->prompt_tokens) / dt;
    s.generated_tps = std::max<int64_t>(0, reading.generated_tokens - last_->generated_tokens) / dt;
    const int64_t firsts = reading.ttft_count - last_->ttft_count;
    if (firsts > 0) s.ttft_mean_s = (reading.ttft_sum_s - last_->ttft_sum_s) / static_cast<double>(firsts);
    s.budgets = reading.budgets;
    samples_.push_back(std::move(s));
    while (samples_.size() > capacity_) samples_.pop_front();
  }
  last_ = reading;
}

std::vector<StatsSample> StatsHistory::Samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {samples_.begin(), samples_.end()};
}

}  // namespace llmhost::server
