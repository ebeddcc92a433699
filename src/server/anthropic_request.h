// Anthropic Messages request bodies (/v1/messages, /v1/messages/count_tokens)
// → InferenceRequest, with the conversation converted to the chat-template
// form the OpenAI parser produces:
//   system (string or text blocks)        → a leading system message
//   role "system" inside messages[]       → a system message in place
//   user text blocks                      → user content (joined with "\n")
//   user tool_result blocks               → role "tool" messages (tool_call_id)
//   assistant text / tool_use / thinking  → content / tool_calls / reasoning_content
//   tools {name, description, input_schema, strict} → {type: function, function: {name, description,
//     parameters, strict}}
//   output_config.format / output_format {type: json_schema, schema} → the output's JSON Schema
//     (structured_output_request.h)
//   thinking {type: enabled|adaptive|disabled} → chat_template_kwargs.enable_thinking, and
//     the think block's budget (budget_tokens; adaptive: output_config.effort, kEffortBudgets)
//   tool_choice {type: auto|any|tool|none}  → ToolChoice (api_request.h)
// Content blocks of other types are refused (400 naming the type), but for
// the ones that carry nothing a local model can use (redacted_thinking and
// the results of Anthropic's server tools), which are skipped.
// A leading system block that is Claude Code's per-request attribution line
// ("x-anthropic-billing-header: ...") is dropped: it is metadata, and at the
// very start of the prompt it would defeat prefix caching across versions.
#pragma once

#include <cstdint>
#include <string_view>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/json_fields.h"

namespace llmhost::server {

// `count_only`: /v1/messages/count_tokens (no generation fields read; no
// max_tokens needed). `anthropic_beta`: the anthropic-beta header (a comma-
// separated list); with "interleaved-thinking-2025-05-14" a thinking budget
// may exceed max_tokens, as the API allows.
MaybeError ParseMessagesRequest(const OJson& body, bool count_only, InferenceRequest* out,
                                std::string_view anthropic_beta = "");

inline constexpr int64_t kMinThinkingBudget = 1024;

// The think-block budget of each output_config.effort under adaptive
// thinking (tokens; 0: no limit). Sized like the thinking a local model does
// for a quick answer / a normal one / a hard problem.
struct EffortBudget {
  const char* effort;
  int64_t tokens;
};
inline constexpr EffortBudget kEffortBudgets[] = {{"low", 1024}, {"medium", 4096}, {"high", 16384},
                                                   {"xhigh", 32768}, {"max", 0}};

}  // namespace llmhost::server
