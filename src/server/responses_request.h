// OpenAI Responses request bodies (POST /v1/responses) → InferenceRequest.
//
//   input: a string (one user message) or items:
//     {type: "message" (or no type), role: user|assistant|system|developer,
//      content: a string or parts (input_text / output_text / text)}
//                                      → a chat message (developer → system)
//     {type: "function_call", call_id, name, arguments (a JSON string)}
//                                      → the assistant's tool_calls (consecutive
//                                        calls join one assistant message)
//     {type: "function_call_output", call_id, output} → a role "tool" message
//     {type: "reasoning", content: [{reasoning_text}] | summary: [{summary_text}]}
//                                      → the next assistant message's reasoning_content
//   instructions                       → a leading system message (not carried
//                                        over by previous_response_id)
//   previous_response_id               → that stored response's conversation first
//   tools: function tools {type: "function", name, description, parameters};
//          other types (web_search, namespace, ... which Codex always sends)
//          are left out of the prompt, and logged: the one exception to
//          refusing what llmhost cannot serve
//   tool_choice: none | auto | required | {type: "function", name} (a call forced)
//   parallel_tool_calls, reasoning.effort (none / minimal: thinking off; low /
//   medium / high: on, with the effort's think budget), max_output_tokens,
//   temperature, top_p, stream, store (default true), text.format (text,
//   json_object, json_schema: server/structured_output_request.h)
// Other fields are ignored; a bad value is a 400 naming it.
#pragma once

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/json_fields.h"
#include "server/response_store.h"

namespace llmhost::server {

MaybeError ParseResponsesRequest(const OJson& body, const ResponseStore& store, InferenceRequest* out);

}  // namespace llmhost::server
