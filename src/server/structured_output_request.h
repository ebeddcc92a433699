// Structured output fields of a request → ConstraintSpec (api_request.h).
//
// OpenAI chat / completions (ReadStructuredOutput):
//   response_format {type: "text"}                       no constraint
//                   {type: "json_object"}                any JSON object
//                   {type: "json_schema", json_schema: {name, schema, strict}}
//                   (llama.cpp's {type: "json_object" | "json_schema", schema} too)
//   structured_outputs {json | regex | choice | grammar | json_object}  (vLLM, one key)
//   guided_json (a schema, or its JSON text), guided_regex, guided_choice,
//   guided_grammar (GBNF)                                (vLLM's older names)
//   grammar (GBNF), json_schema (a schema)               (llama.cpp)
// Responses (ReadResponsesTextFormat): text.format {type: "text" |
//   "json_object" | "json_schema", name, schema, strict}.
// Anthropic Messages (ReadAnthropicOutputFormat): output_config.format, or
//   the beta's output_format, {type: "json_schema", schema}; objects get
//   additionalProperties false unless the schema says otherwise.
//
// Two of these at once is a 400 naming both. Only the shape is checked
// here; the schema, regex or grammar is compiled (and its errors reported)
// when the model is known (server/output_constraint.h).
#pragma once

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/json_fields.h"

namespace llmhost::server {

// guided_choice / structured_outputs.choice: at most this many choices.
inline constexpr size_t kMaxGuidedChoices = 1024;

MaybeError ReadStructuredOutput(const OJson& body, ConstraintSpec* out);
MaybeError ReadResponsesTextFormat(const OJson& body, ConstraintSpec* out);
MaybeError ReadAnthropicOutputFormat(const OJson& body, ConstraintSpec* out);

}  // namespace llmhost::server
