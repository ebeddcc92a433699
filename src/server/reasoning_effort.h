// OpenAI reasoning effort (chat `reasoning_effort`, Responses
// `reasoning.effort`) as llmhost's switches: none / minimal turn thinking off
// (enable_thinking false); low / medium / high keep it on with the think
// budget of Anthropic's effort of that name (anthropic_request.h:
// kEffortBudgets). An enable_thinking the request set itself in
// chat_template_kwargs wins over the effort's.
#pragma once

#include <string>

#include "server/api_error.h"
#include "server/api_request.h"

namespace llmhost::server {

// 400 naming `param` for another value.
MaybeError ApplyReasoningEffort(const std::string& effort, const std::string& param, InferenceRequest* out);

}  // namespace llmhost::server
