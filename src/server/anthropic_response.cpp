// Anthropic Messages bodies and stream events.
//
// Content blocks follow the output in order: thinking (with a signature),
// text, tool_use (input an object). Streamed, each block is
// content_block_start, its deltas (thinking_delta then signature_delta,
// text_delta, input_json_delta), content_block_stop, with indexes 0, 1, ...
#include <nlohmann/json.hpp>

#include "server/response_format.h"
#include "util/sha256.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;
using Kind = OutputEvent::Kind;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// input_tokens is the uncached part of the prompt, as Anthropic counts it.
Json UsageJson(const GenerationUsage& u) {
  return Json{{"input_tokens", u.prompt_tokens - u.cached_tokens},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", u.cached_tokens},
              {"output_tokens", u.completion_tokens}};
}

// Clients hand thinking blocks back with their signature; llmhost does not
// check it (a local model's reasoning is not secret), but it is never empty.
std::string Signature(const std::string& thinking) { return "llmhost-" + ToHex(Sha256Of(thinking)); }

// A tool call's arguments as the `input` object (the parser's are a JSON
// object; anything else becomes {}).
Json InputObject(const std::string& arguments) {
  Json j = Json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : Json::object();
}

struct Block {
  enum Type { kText, kThinking, kToolUse } type = kText;
  std::string text;  // text, thinking, or the tool's arguments
  std::string id, name;
  size_t call = 0;   // kToolUse: the call's API index
  bool discarded = false;
};

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
    return SseEvent("message_start", Dump({{"type", "message_start"}, {"message", std::move(message)}}));
  }

  std::string Events(int, const std::vector<OutputEvent>& events, const std::vector<TokenLogprob>&) override {
    std::string out;
    for (const OutputEvent& e : events) {
      switch (e.kind) {
        case Kind::kContent:
        case Kind::kReasoning: {
          const Block::Type type = e.kind == Kind::kContent ? Block::kText : Block::kThinking;
          if (!open_ || blocks_.back().type != type) out += Open(Block{type});
          blocks_.back().text += e.text;
          if (stream_) {
            out += DeltaEvent(type == Block::kText ? Json{{"type", "text_delta"}, {"text", e.text}}
                                                   : Json{{"type", "thinking_delta"}, {"thinking", e.text}});
          }
          break;
        }
        case Kind::kToolCallStart: {
          Block b{Block::kToolUse};
          b.id = e.id;
          b.name = e.name;
          b.call = e.index;
          out += Open(std::move(b));
          break;
        }
        case Kind::kToolCallArguments:
          if (!OpenCall(e.index)) break;
          blocks_.back().text += e.text;
          if (stream_) out += DeltaEvent(Json{{"type", "input_json_delta"}, {"partial_json", e.text}});
          break;
        case Kind::kToolCallEnd:
          if (!OpenCall(e.index)) break;
          called_ = true;
          out += Close();
          break;
        case Kind::kToolCallDiscarded:
          // Streamed, the block was announced and cannot be taken back: it
          // ends here; its markup follows as text.
          if (!OpenCall(e.index)) break;
          blocks_.back().discarded = true;
          out += Close();
          break;
      }
    }
    return out;
  }

  std::string FinishChoice(int, FinishReason reason, const std::string& stop_string) override {
    reason_ = reason;
    stop_string_ = stop_string;
    return "";
  }

  std::string End(const GenerationUsage& usage) override {
    const Json stop_sequence = reason_ == FinishReason::kStopString ? Json(stop_string_) : Json(nullptr);
    const char* stop_reason = called_ && reason_ != FinishReason::kLength ? "tool_use" : AnthropicStopReason(reason_);
    if (!stream_) {
      Json content = Json::array();
      for (const Block& b : blocks_) {
        if (b.discarded) continue;
        if (b.type == Block::kText) {
          content.push_back({{"type", "text"}, {"text", b.text}});
        } else if (b.type == Block::kThinking) {
          content.push_back({{"type", "thinking"}, {"thinking", b.text}, {"signature", Signature(b.text)}});
        } else {
          content.push_back({{"type", "tool_use"}, {"id", b.id}, {"name", b.name}, {"input", InputObject(b.text)}});
        }
      }
      if (content.empty()) content.push_back({{"type", "text"}, {"text", ""}});
      Json body = {{"id", meta_.id},
                   {"type", "message"},
                   {"role", "assistant"},
                   {"model", meta_.model},
                   {"content", std::move(content)},
                   {"stop_reason", stop_reason},
                   {"stop_sequence", stop_sequence},
                   {"usage", UsageJson(usage)}};
      return Dump(body);
    }
    std::string out = Close();
    if (blocks_.empty()) {  // clients expect one block
      out += Open(Block{Block::kText});
      out += Close();
    }
    return out +
           SseEvent("message_delta",
                    Dump({{"type", "message_delta"},
                          {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", stop_sequence}}},
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
  size_t Index() const { return blocks_.size() - 1; }

  std::string DeltaEvent(Json delta) const {
    return SseEvent("content_block_delta",
                    Dump({{"type", "content_block_delta"}, {"index", Index()}, {"delta", std::move(delta)}}));
  }

  // Ends the open block (if any) and starts `b`.
  std::string Open(Block b) {
    std::string out = Close();
    blocks_.push_back(std::move(b));
    open_ = true;
    if (!stream_) return out;
    const Block& n = blocks_.back();
    Json start;
    if (n.type == Block::kText) {
      start = {{"type", "text"}, {"text", ""}};
    } else if (n.type == Block::kThinking) {
      start = {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}};
    } else {
      start = {{"type", "tool_use"}, {"id", n.id}, {"name", n.name}, {"input", Json::object()}};
    }
    return out + SseEvent("content_block_start", Dump({{"type", "content_block_start"},
                                                       {"index", Index()},
                                                       {"content_block", std::move(start)}}));
  }

  std::string Close() {
    if (!open_) return "";
    open_ = false;
    if (!stream_) return "";
    std::string out;
    if (blocks_.back().type == Block::kThinking) {
      out += DeltaEvent(Json{{"type", "signature_delta"}, {"signature", Signature(blocks_.back().text)}});
    }
    return out + SseEvent("content_block_stop", Dump({{"type", "content_block_stop"}, {"index", Index()}}));
  }

  bool OpenCall(size_t index) const {
    return open_ && blocks_.back().type == Block::kToolUse && blocks_.back().call == index;
  }

  ResponseMeta meta_;
  bool stream_;
  std::vector<Block> blocks_;
  bool open_ = false;  // blocks_.back() is still open
  bool called_ = false;
  FinishReason reason_ = FinishReason::kStop;
  std::string stop_string_;
};

}  // namespace

std::unique_ptr<ResponseFormatter> MakeMessagesFormatter(const ResponseMeta& meta, bool stream) {
  return std::make_unique<MessagesFormatter>(meta, stream);
}

}  // namespace llmhost::server
