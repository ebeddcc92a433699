#include "server/live_requests_json.h"

namespace llmhost::server {

nlohmann::ordered_json LiveRequestsJson(const LiveRequests& live, std::chrono::steady_clock::time_point now) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const LiveRequest& r : live.requests) {
    const std::optional<double> ttft = r.TtftSeconds();
    list.push_back({{"id", r.id},
                    {"request_id", r.request_id},
                    {"state", LiveStateName(r.state)},
                    {"prompt_tokens", r.prompt_tokens},
                    {"prompt_done", r.prompt_done},
                    {"generated_tokens", r.generated},
                    {"age_s", r.AgeSeconds(now)},
                    {"ttft_s", ttft ? nlohmann::ordered_json(*ttft) : nlohmann::ordered_json(nullptr)},
                    {"tokens_per_s", r.DecodeTokensPerSecond(now)}});
  }
  return list;
}

}  // namespace llmhost::server
