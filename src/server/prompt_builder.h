// From an InferenceRequest to what the engine runs: the prompt's token ids
// (chat template + tokenizer, raw text, or ids as given) and the resolved
// sampling settings.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/request.h"
#include "pool/loaded_engine.h"
#include "pool/model_settings.h"
#include "server/api_error.h"
#include "server/api_request.h"
#include "server/json_fields.h"

namespace llmhost::server {

// Renders and encodes the prompt. 400 when the model has no chat template,
// the template fails (its message), the prompt is empty, a token id is out
// of the vocabulary, or the prompt does not fit the context:
// "Prompt too long: N tokens exceeds max context window of M tokens".
// `text`, when given, receives the rendered chat prompt ("" for other kinds).
MaybeError BuildPromptIds(const InferenceRequest& request, const ServedModel& model,
                          std::vector<int32_t>* ids, std::string* text = nullptr);

// The chat template's text for a chat request (for tests and count_tokens).
MaybeError RenderChat(const InferenceRequest& request, const ServedModel& model, std::string* text);

// Per-model settings (<home>/model_settings.json) under the request's own
// values: unset sampling fields and max_tokens take the model's settings;
// chat_template_kwargs are the model's merged with the request's (the
// request wins per key).
void ApplyModelSettings(const ModelSettings& settings, InferenceRequest* request);

// Request > the model's generation_config.json > global defaults
// (temperature 1.0, top_p 0.95, top_k 0, min_p 0, repetition_penalty 1.0).
SamplingParams ResolveSampling(const SamplingRequest& request, const GenerationConfig& model_defaults);

// The engine request (prompt, sampling, stops, max_tokens); on_event left unset.
GenerationRequest MakeGenerationRequest(const InferenceRequest& request, const ServedModel& model,
                                        std::vector<int32_t> prompt);

}  // namespace llmhost::server
