// Chat templates: renders a model's Jinja chat template exactly as Hugging Face
// transformers does (Jinja2 ImmutableSandboxedEnvironment with trim_blocks,
// lstrip_blocks, loop controls, {% generation %}, tojson, raise_exception,
// strftime_now), with limits that make untrusted templates safe.
//
// Parse once, render per request: a ChatTemplate is immutable and may be
// rendered from several threads at once.
#pragma once

#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/jinja_eval.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace llmhost {

namespace jinja {
struct Program;
}

struct ChatTemplateInput {
  // JSON as the template sees it. ordered_json: Python dicts keep insertion
  // order, and templates print them (tojson), so key order must survive.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: no tools (the template sees None)
  bool add_generation_prompt = true;
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // extra variables (enable_thinking, ...)
  std::string bos_token;
  std::string eos_token;
  // The clock strftime_now() reads: a local civil time (wins), else a time
  // point shown in local time, else the real local time.
  std::optional<std::tm> now_local;
  std::optional<std::chrono::system_clock::time_point> now;
};

class ChatTemplate {
 public:
  // Parses a template; InvalidArgument with the line of a syntax error.
  static Result<ChatTemplate> Parse(std::string_view source);

  // Renders; InvalidArgument for template errors (raise_exception, undefined
  // attribute access, type errors), ResourceExhausted when a limit is hit.
  Result<std::string> Render(const ChatTemplateInput& input) const;
  Result<std::string> Render(const ChatTemplateInput& input, const jinja::RenderLimits& limits) const;

  const std::string& source() const { return *source_; }

 private:
  ChatTemplate(std::shared_ptr<const jinja::Program> program, std::shared_ptr<const std::string> source)
      : program_(std::move(program)), source_(std::move(source)) {}
  std::shared_ptr<const jinja::Program> program_;
  std::shared_ptr<const std::string> source_;
};

// The chat templates and special tokens of a Hugging Face model directory.
struct ModelChatTemplates {
  std::string default_template;                // "" when the model has none
  std::map<std::string, std::string> named;    // other named templates ("tool_use", ...)
  std::string bos_token;                       // "" when absent
  std::string eos_token;
};

// Reads `chat_template.jinja` (else `chat_template.json`, else
// `tokenizer_config.json`'s `chat_template`: a string, or a list of
// {name, template} where "default" is the default), named templates from
// `additional_chat_templates/*.jinja` or the list, and bos/eos tokens from
// tokenizer_config.json (a string or {"content": ...}). A directory without
// any template is not an error: default_template is then empty.
Result<ModelChatTemplates> LoadModelChatTemplates(const std::string& model_dir);

// The same for a model directory or a GGUF file (its tokenizer.chat_template,
// and its bos/eos ids as `tok` spells them).
Result<ModelChatTemplates> LoadChatTemplatesAt(const std::string& path, const Tokenizer& tok);

// Parses "YYYY-MM-DD[THH:MM[:SS]]" into a civil time (for --now).
Result<std::tm> ParseIsoLocalTime(std::string_view text);

}  // namespace llmhost
