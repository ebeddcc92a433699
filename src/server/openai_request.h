// OpenAI request bodies → InferenceRequest.
//
// /v1/chat/completions: messages (system/developer/user/assistant/tool; string
// or content-part content; assistant tool_calls), tools, chat_template_kwargs,
// stream + stream_options.include_usage, sampling (temperature, top_p, top_k,
// min_p, repetition/presence/frequency penalties, seed, stop, stop_token_ids,
// max_tokens / max_completion_tokens, logprobs + top_logprobs).
// /v1/completions: prompt as a string or token ids, logprobs as a count.
//
// Messages are converted to the form chat templates expect (as transformers'
// apply_chat_template receives them): text parts joined into one string,
// tool-call arguments parsed from their JSON string into objects.
#pragma once

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/json_fields.h"

namespace llmhost::server {

MaybeError ParseChatCompletionsRequest(const OJson& body, InferenceRequest* out);
MaybeError ParseCompletionsRequest(const OJson& body, InferenceRequest* out);

// Text of a content value: a string, null (""), or an array of parts whose
// "text" parts are joined with "\n". 400 for other part types (images:
// the models served are text-only). `path` names the field.
MaybeError ContentText(const OJson& content, const std::string& path, std::string* out);

// Tool-call arguments as templates expect them: a JSON string holding an
// object becomes that object; other strings stay strings; null is {}.
OJson ToolArgumentsObject(const OJson& args);

// Sampling fields shared by the OpenAI routes (not logprobs, whose form differs).
MaybeError ReadOpenAISampling(const OJson& body, SamplingRequest* s);

}  // namespace llmhost::server
