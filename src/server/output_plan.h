// How one chat request's output is read back: which markup the model writes
// (its chat template's, or the `tool_parser` model setting), whether its
// think block is parsed, whether the prompt already opened it, and what the
// engine must do for the parser (keep the markup's special tokens, close the
// think block at its budget).
#pragma once

#include <string>

#include "chat/output_parser.h"
#include "engine/request.h"
#include "pool/loaded_engine.h"
#include "pool/model_settings.h"
#include "server/api_request.h"

namespace llmhost::server {

struct OutputPlan {
  bool enabled = false;  // chat APIs only; the completions API returns raw text
  OutputFormat format = OutputFormat::kNone;
  ParseOptions options;
  bool parallel = true;  // several calls in one turn (else only the first is kept)
};

// `prompt`: the rendered chat prompt (its tail says whether the generation
// prompt opened a think block). Fills `gen`'s keep_special_ids and
// reasoning_budget. The tool_parser setting was validated when it was stored.
OutputPlan PlanOutput(const InferenceRequest& request, const ServedModel& model, const ModelSettings& settings,
                      const std::string& prompt, GenerationRequest* gen);

// Thinking is on unless the template variables turn it off
// (enable_thinking / thinking false).
// The tokenizer's special ids whose text is part of a marker: decoded even
// when special tokens are skipped, so that the output parser sees them.
std::vector<int32_t> MarkupSpecialIds(const Tokenizer& tok, const FormatMarkers& markers);

bool ThinkingEnabled(const nlohmann::ordered_json& kwargs);

// The prompt ends inside an open think block: its last `open` comes after
// its last `close`, within the prompt's last few bytes (the generation prompt).
bool PromptOpensThinkBlock(const std::string& prompt, const std::string& open, const std::string& close);

}  // namespace llmhost::server
