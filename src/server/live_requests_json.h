// The status JSON's live requests of one model (/api/status, the dashboard's
// Status page).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>

#include "engine/live_request.h"

namespace llmhost::server {

// [{"id","request_id","state","prompt_tokens","prompt_done",
//   "generated_tokens","age_s","ttft_s" (null until the first token),
//   "tokens_per_s"}], ages as of `now`.
nlohmann::ordered_json LiveRequestsJson(const LiveRequests& live, std::chrono::steady_clock::time_point now);

}  // namespace llmhost::server
