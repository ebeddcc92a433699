// The internal form of an inference request, whichever API it came through
// (OpenAI chat / completions, Anthropic messages). Parsers (openai_request,
// anthropic_request) fill it from the client's JSON; the prompt builder turns
// it into token ids; the engine bridge into an engine request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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
  bool ignore_eos = false;
  bool logprobs = false;
  int top_logprobs = 0;  // 0..20
};

enum class ApiKind { kChatCompletions, kCompletions, kMessages, kCountTokens };
enum class PromptKind { kChat, kText, kTokens };

struct InferenceRequest {
  ApiKind api = ApiKind::kChatCompletions;
  std::string model;
  bool stream = false;
  bool include_usage = false;  // OpenAI stream_options.include_usage

  PromptKind prompt_kind = PromptKind::kChat;
  // kChat: messages as the chat template sees them (transformers' format:
  // string content, tool_calls with arguments as objects, role "tool").
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: none; else OpenAI-style function tools
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  bool add_generation_prompt = true;
  std::string prompt_text;          // kText
  std::vector<int32_t> prompt_ids;  // kTokens

  SamplingRequest sampling;
};

}  // namespace llmhost::server
