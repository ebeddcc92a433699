// The internal form of an inference request, whichever API it came through
// (OpenAI chat / completions, Anthropic messages). Parsers (openai_request,
// anthropic_request) fill it from the client's JSON; the prompt builder turns
// it into token ids; the engine bridge into an engine request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmhost::server {

// What the client asked for; unset fields take the model's defaults
// (generation_config.json), then the global ones.
struct SamplingRequest {
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;  // <= 0: off
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::optional<uint64_t> seed;
  std::optional<int64_t> max_tokens;  // >= 1
  std::vector<std::string> stop;      // stop strings (not included in the output)
  std::vector<int32_t> stop_token_ids;
  std::vector<std::pair<int32_t, float>> logit_bias;  // OpenAI: token id → [-100, 100]
  bool ignore_eos = false;
  bool logprobs = false;
  int top_logprobs = 0;  // 0..20
};

// Which tools the model may call (OpenAI tool_choice, Anthropic tool_choice).
// kNone: the tools are not shown to the model; `names` (a named function,
// allowed_tools, Anthropic's {"type": "tool"}): only those are shown.
// kRequired (OpenAI "required" / a named function, Anthropic any / tool):
// the output is constrained to a call in the model's tool-call markup
// (server/output_constraint.h).
struct ToolChoice {
  enum Mode { kAuto, kNone, kRequired };
  Mode mode = kAuto;
  std::vector<std::string> names;  // empty: every tool of the request
  bool parallel = true;            // several calls in one turn (OpenAI parallel_tool_calls,
                                   // Anthropic disable_parallel_tool_use); for the tool-call parser
};

// Structured output: what the request constrains its output to (one field
// at most: response_format, structured_outputs, guided_*, llama.cpp's
// grammar / json_schema; server/structured_output_request.h reads them).
struct ConstraintSpec {
  enum class Kind { kNone, kJsonObject, kJsonSchema, kRegex, kChoice, kGrammar };
  Kind kind = Kind::kNone;
  std::string field;                  // the request field it came from, for errors
  nlohmann::ordered_json schema;      // kJsonSchema
  bool strict = false;                // kJsonSchema: additionalProperties false unless the schema says
  std::string text;                   // kRegex (ECMAScript) and kGrammar (GBNF)
  std::vector<std::string> choices;   // kChoice
};

enum class ApiKind { kChatCompletions, kCompletions, kMessages, kCountTokens, kResponses, kOllamaChat, kOllamaGenerate };
enum class PromptKind { kChat, kText, kTokens };

struct InferenceRequest {
  ApiKind api = ApiKind::kChatCompletions;
  std::string model;
  bool stream = false;
  bool include_usage = false;  // OpenAI stream_options.include_usage
  int choices = 1;             // OpenAI `n`, 1..kMaxChoices (engine/request.h)

  PromptKind prompt_kind = PromptKind::kChat;
  // kChat: messages as the chat template sees them (transformers' format:
  // string content, tool_calls with arguments as objects, role "tool").
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: none; else OpenAI-style function tools
  ToolChoice tool_choice;
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  bool add_generation_prompt = true;
  std::string prompt_text;          // kText
  std::vector<int32_t> prompt_ids;  // kTokens

  SamplingRequest sampling;
  ConstraintSpec constraint;
  // Tokens the think block may run before the engine closes it (Anthropic
  // thinking.budget_tokens, or output_config.effort's budget); unset: no limit.
  std::optional<int64_t> reasoning_budget;

  // kResponses (responses_request.h): what the response object echoes
  // (instructions, tools as sent, tool_choice, store, ...), and the
  // conversation without the instructions (input items as chat messages, after
  // those of previous_response_id), which a stored response continues.
  nlohmann::ordered_json responses_echo;
  nlohmann::ordered_json responses_conversation;

  // Ollama (ollama_request.h): how long the model stays loaded after this
  // request (seconds, negative: no expiry), and a request that only loads
  // (or, with keep_alive 0, unloads) the model.
  std::optional<double> keep_alive_s;
  bool load_only = false;
};

// Narrows request->tools to what tool_choice lets the model see.
inline void ApplyToolChoice(InferenceRequest* r) {
  if (!r->tools.is_array()) return;
  if (r->tool_choice.mode == ToolChoice::kNone) {
    r->tools = nullptr;
    return;
  }
  if (r->tool_choice.names.empty()) return;
  nlohmann::ordered_json kept = nlohmann::ordered_json::array();
  for (const auto& t : r->tools) {
    const std::string& name = t["function"]["name"].get_ref<const std::string&>();
    for (const std::string& n : r->tool_choice.names) {
      if (n == name) {
        kept.push_back(t);
        break;
      }
    }
  }
  r->tools = std::move(kept);
}

}  // namespace llmhost::server
