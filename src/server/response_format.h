// Response formatting for the three generation APIs, streamed (SSE) or not.
//
// A ResponseFormatter sees one generation of `meta.choices` choices (OpenAI's
// `n`; Anthropic has one) as a sequence of events and returns the bytes to
// send for each:
//   Start(c, usage)         choice c's prefill done, its first token on the way
//                           (OpenAI: c's role chunk; Anthropic: message_start
//                           + content_block_start)
//   Events(c, events, lp)   what choice c's new text became (chat/output_parser.h:
//                           content, reasoning, tool-call start / arguments /
//                           end / discarded; ChoiceOutput numbers the calls)
//                           and the logprobs behind it; Delta(c, text, lp) is
//                           plain content
//   FinishChoice(c, r, s)   choice c ended (OpenAI: its finish_reason chunk)
//   End(usage)              every choice ended: usage, [DONE] / message_stop
// Choices interleave in any order. Non-streaming formatters accumulate and
// return the whole JSON body from End(). Pure functions of their inputs:
// unit-tested without a server.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/output_parser.h"
#include "engine/request.h"
#include "server/api_error.h"

namespace llmhost::server {

struct TopLogprob {
  std::string token;  // the token's text
  double logprob = 0;
};

struct TokenLogprob {
  std::string token;
  double logprob = 0;
  std::vector<TopLogprob> top;  // most likely first
};

struct GenerationUsage {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, read from the prefix cache
  int64_t completion_tokens = 0;
};

enum class KeepAliveMode { kChunk, kComment, kOff };

struct ResponseMeta {
  std::string id;       // "chatcmpl-…", "cmpl-…", "msg_…"
  std::string model;    // as the client named it
  int64_t created = 0;  // unix seconds
  bool include_usage = false;  // OpenAI stream_options.include_usage
  bool logprobs = false;
  int top_logprobs = 0;
  int choices = 1;  // OpenAI `n` (server/api_request.h: kMaxChoices)
};

class ResponseFormatter {
 public:
  virtual ~ResponseFormatter() = default;
  virtual bool streaming() const = 0;
  // Of the streamed body.
  virtual const char* content_type() const { return "text/event-stream"; }
  virtual std::string Start(int choice, const GenerationUsage& usage) = 0;
  virtual std::string Events(int choice, const std::vector<OutputEvent>& events,
                             const std::vector<TokenLogprob>& logprobs) = 0;
  std::string Delta(int choice, const std::string& text, const std::vector<TokenLogprob>& logprobs) {
    std::vector<OutputEvent> events;
    if (!text.empty()) events.push_back(OutputEvent{OutputEvent::Kind::kContent, 0, text, "", ""});
    return Events(choice, events, logprobs);
  }
  // `reason`: the engine's (engine/request.h) kStop, kStopString or kLength;
  // a choice that made tool calls and stopped reports tool_calls / tool_use.
  virtual std::string FinishChoice(int choice, FinishReason reason, const std::string& stop_string) = 0;
  // `usage`: the prompt once, the completion tokens of every choice.
  virtual std::string End(const GenerationUsage& usage) = 0;
  // Streaming only: an error after the stream started.
  virtual std::string StreamError(const ApiError& error) = 0;
  // Streaming only: a keep-alive while nothing else is sent ("" for kOff).
  virtual std::string KeepAlive(KeepAliveMode mode) = 0;
};

std::unique_ptr<ResponseFormatter> MakeChatCompletionsFormatter(const ResponseMeta& meta, bool stream);
std::unique_ptr<ResponseFormatter> MakeCompletionsFormatter(const ResponseMeta& meta, bool stream);
std::unique_ptr<ResponseFormatter> MakeMessagesFormatter(const ResponseMeta& meta, bool stream);

// OpenAI Responses (responses_response.cpp). `echo`: the request fields the
// response object repeats (InferenceRequest::responses_echo). `on_complete`
// (may be empty) gets the final response object and the output as one chat
// assistant message (content, reasoning_content, tool_calls), to be stored.
using ResponseCompleted = std::function<void(const nlohmann::ordered_json& response,
                                             const nlohmann::ordered_json& assistant_message)>;
std::unique_ptr<ResponseFormatter> MakeResponsesFormatter(const ResponseMeta& meta, bool stream,
                                                          nlohmann::ordered_json echo, ResponseCompleted on_complete);

// Ollama's /api/chat (`chat`) and /api/generate (ollama_response.cpp).
std::unique_ptr<ResponseFormatter> MakeOllamaFormatter(const ResponseMeta& meta, bool stream, bool chat);
// Now, in RFC 3339 with nanoseconds, as Ollama writes created_at.
std::string OllamaTimestamp();

// A random id: prefix + 24 hex digits.
std::string NewResponseId(const std::string& prefix);

// One server-sent event: "data: <json>\n\n", or with an event name.
std::string SseData(const std::string& data);
std::string SseEvent(const std::string& event, const std::string& data);

// finish_reason (OpenAI) and stop_reason (Anthropic) names.
const char* OpenAIFinishReason(FinishReason r);
const char* AnthropicStopReason(FinishReason r);

}  // namespace llmhost::server
