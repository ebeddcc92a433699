// Anthropic Messages bodies and stream events.
#include <nlohmann/json.hpp>

#include "server/response_format.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// input_tokens is the uncached part of the prompt, as Anthropic counts it.
Json UsageJson(const GenerationUsage& u) {
  return Json{{"input_tokens", u.prompt_tokens - u.cached_tokens},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", u.cached_tokens},
              {"output_tokens", u.completion_tokens}};
}

class MessagesFormatter final : public ResponseFormatter {
 public:
  MessagesFormatter(const ResponseMeta& meta, bool stream) : meta_(meta), stream_(stream) {}
  bool streaming() const override { return stream_; }

  std::string Start(int, const GenerationUsage& usage) override {
    if (!stream_) return "";
    Json message = {{"id", meta_.id},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", meta_.model},
                    {"content", Json::array()},
                    {"stop_reason", nullptr},
                    {"stop_sequence", nullptr},
                    {"usage", UsageJson(usage)}};
    return SseEvent("message_start", Dump({{"type", "message_start"}, {"message", std::move(message)}})) +
           SseEvent("content_block_start",
                    Dump({{"type", "content_block_start"},
                          {"index", 0},
                          {"content_block", {{"type", "text"}, {"text", ""}}}}));
  }

  std::string Delta(int, const std::string& text, const std::vector<TokenLogprob>&) override {
    if (!stream_) {
      text_ += text;
      return "";
    }
    if (text.empty()) return "";
    return SseEvent("content_block_delta",
                    Dump({{"type", "content_block_delta"},
                          {"index", 0},
                          {"delta", {{"type", "text_delta"}, {"text", text}}}}));
  }

  std::string FinishChoice(int, FinishReason reason, const std::string& stop_string) override {
    reason_ = reason;
    stop_string_ = stop_string;
    return "";
  }

  std::string End(const GenerationUsage& usage) override {
    const Json stop_sequence = reason_ == FinishReason::kStopString ? Json(stop_string_) : Json(nullptr);
    if (!stream_) {
      Json body = {{"id", meta_.id},
                   {"type", "message"},
                   {"role", "assistant"},
                   {"model", meta_.model},
                   {"content", Json::array({Json{{"type", "text"}, {"text", text_}}})},
                   {"stop_reason", AnthropicStopReason(reason_)},
                   {"stop_sequence", stop_sequence},
                   {"usage", UsageJson(usage)}};
      return Dump(body);
    }
    return SseEvent("content_block_stop", Dump({{"type", "content_block_stop"}, {"index", 0}})) +
           SseEvent("message_delta",
                    Dump({{"type", "message_delta"},
                          {"delta", {{"stop_reason", AnthropicStopReason(reason_)},
                                     {"stop_sequence", stop_sequence}}},
                          {"usage", UsageJson(usage)}})) +
           SseEvent("message_stop", Dump({{"type", "message_stop"}}));
  }

  std::string StreamError(const ApiError& e) override {
    return SseEvent("error", ErrorJson(e, ApiFlavor::kAnthropic));
  }

  std::string KeepAlive(KeepAliveMode mode) override {
    if (mode == KeepAliveMode::kOff) return "";
    if (mode == KeepAliveMode::kComment) return ": keep-alive\n\n";
    return SseEvent("ping", R"({"type":"ping"})");
  }

 private:
  ResponseMeta meta_;
  bool stream_;
  std::string text_;
  FinishReason reason_ = FinishReason::kStop;
  std::string stop_string_;
};

}  // namespace

std::unique_ptr<ResponseFormatter> MakeMessagesFormatter(const ResponseMeta& meta, bool stream) {
  return std::make_unique<MessagesFormatter>(meta, stream);
}

}  // namespace llmhost::server
