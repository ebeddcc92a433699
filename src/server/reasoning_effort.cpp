#include "server/reasoning_effort.h"

#include "server/anthropic_request.h"

namespace llmhost::server {

MaybeError ApplyReasoningEffort(const std::string& effort, const std::string& param, InferenceRequest* out) {
  nlohmann::ordered_json& kwargs = out->chat_template_kwargs;
  if (!kwargs.is_object()) kwargs = nlohmann::ordered_json::object();
  const bool explicit_switch = kwargs.contains("enable_thinking");
  if (effort == "none" || effort == "minimal") {
    if (!explicit_switch) kwargs["enable_thinking"] = false;
    return std::nullopt;
  }
  for (const EffortBudget& e : kEffortBudgets) {
    if (effort == e.effort && e.tokens > 0) {
      if (!explicit_switch) kwargs["enable_thinking"] = true;
      out->reasoning_budget = e.tokens;
      return std::nullopt;
    }
  }
  return BadRequest("'" + param + "' must be none, minimal, low, medium, high or xhigh; got '" + effort + "'", param);
}

}  // namespace llmhost::server
