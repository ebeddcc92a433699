// GET /admin/api/history: the dashboard's charts over the last hour.
//   {"interval_s": 5, "samples": [{"time_ms", "prompt_tps", "generated_tps",
//    "ttft_mean_s" (null: no first token in the interval),
//    "memory": [{"name": "Host"|"GPU n", "usage_bytes", "committed_bytes", "ceiling_bytes"}]}]}
// Oldest first, one sample per interval (stats_history.h); the ticker
// (api_server.cpp) takes a reading with ReadStats when one is due.
#include <chrono>

#include <nlohmann/json.hpp>

#include "server/api_server.h"
#include "server/pool_json.h"

namespace llmhost::server {

StatsReading ReadStats(ApiServer& server) {
  StatsReading r;
  r.steady_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  r.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  const ApiServer::Counters& c = server.counters();
  r.prompt_tokens = c.prompt_tokens.load();
  r.generated_tokens = c.completion_tokens.load();
  r.ttft_count = c.first_tokens.load();
  r.ttft_sum_s = static_cast<double>(c.ttft_us.load()) / 1e6;
  const MemorySnapshot m = server.pool().SampleRss();  // every few seconds: the cheap reading
  r.budgets.push_back({"Host", m.usage, m.committed[0], m.host.admission_ceiling});
  for (size_t n = 0; n < m.devices.size(); ++n) {
    const DeviceBudgetSnapshot& d = m.devices[n];
    if (!d.present) continue;
    r.budgets.push_back({"GPU " + std::to_string(d.gpu), d.usage,
                         m.committed[BudgetIndex(GpuBudget(static_cast<int>(n)))], d.limits.admission_ceiling});
  }
  return r;
}

void HandleHistory(ApiServer& server, const HttpRequest&, const std::shared_ptr<ResponseWriter>& writer) {
  using Json = nlohmann::ordered_json;
  Json samples = Json::array();
  for (const StatsSample& s : server.history().Samples()) {
    Json memory = Json::array();
    for (const BudgetReading& b : s.budgets) {
      memory.push_back({{"name", b.name}, {"usage_bytes", b.usage_bytes}, {"committed_bytes", b.committed_bytes},
                        {"ceiling_bytes", b.ceiling_bytes}});
    }
    samples.push_back({{"time_ms", s.unix_ms}, {"prompt_tps", s.prompt_tps}, {"generated_tps", s.generated_tps},
                       {"ttft_mean_s", s.ttft_mean_s ? Json(*s.ttft_mean_s) : Json(nullptr)},
                       {"memory", std::move(memory)}});
  }
  SendJson(writer, Json{{"interval_s", server.history().interval_s()}, {"samples", std::move(samples)}});
}

}  // namespace llmhost::server
