// A conversation through a model's own chat template, as token ids: what
// `generate --chat` and an in-process `run` feed the model.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost::cli {

struct ChatPrompt {
  std::vector<int32_t> ids;
  std::string template_source;  // the template used (to detect its output format)
};

// `messages` ([{role, content}]) rendered with the generation prompt through
// the template of the model at `path` (folder: chat_template.jinja /
// tokenizer_config.json; GGUF: tokenizer.chat_template), then encoded without
// added specials (the template writes BOS where the family has one, as
// transformers' apply_chat_template). NotFound when the model has no template.
Result<ChatPrompt> ChatPromptIds(const std::string& path, const Tokenizer& tok, const nlohmann::ordered_json& messages);

}  // namespace llmhost::cli
