// OpenAI chat.completion(.chunk) and text_completion bodies.
#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "server/response_format.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json UsageJson(const GenerationUsage& u) {
  return Json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json Bytes(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}.
Json ChatLogprobEntries(const std::vector<TokenLogprob>& lps) {
  Json content = Json::array();
  for (const TokenLogprob& t : lps) {
    Json top = Json::array();
    for (const TopLogprob& alt : t.top) {
      top.push_back({{"token", alt.token}, {"logprob", alt.logprob}, {"bytes", Bytes(alt.token)}});
    }
    content.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", Bytes(t.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return content;
}

// Completions logprobs: parallel arrays; text_offset counts bytes of the output.
struct CompletionLogprobs {
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(),
       offsets = Json::array();
  void Add(const std::vector<TokenLogprob>& lps, int64_t* offset) {
    for (const TokenLogprob& t : lps) {
      tokens.push_back(t.token);
      token_logprobs.push_back(t.logprob);
      Json alts = Json::object();
      for (const TopLogprob& a : t.top) alts[a.token] = a.logprob;
      top.push_back(std::move(alts));
      offsets.push_back(*offset);
      *offset += static_cast<int64_t>(t.token.size());
    }
  }
  Json ToJson() const {
    return Json{{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top},
                {"text_offset", offsets}};
  }
};

std::string ErrorEvent(const ApiError& e) {
  return SseData(ErrorJson(e, ApiFlavor::kOpenAI)) + SseData("[DONE]");
}

struct CallState {
  std::string id, name, arguments;
  bool discarded = false;  // malformed after it started: its markup became content
};

// What one choice has produced (non-streaming) and how it ended.
struct ChoiceState {
  std::string text;
  std::string reasoning;
  std::vector<CallState> calls;  // by API index
  bool called = false;           // a tool call was made (finish_reason tool_calls)
  Json chat_logprobs = Json::array();
  CompletionLogprobs completion_logprobs;
  int64_t offset = 0;  // completions' text_offset
  const char* finish_reason = "stop";
};

// OpenAI's two generation APIs differ in their object names and in where a
// choice's text and logprobs go; the streaming and choice bookkeeping is one.
class OpenAIFormatter : public ResponseFormatter {
 public:
  OpenAIFormatter(const ResponseMeta& meta, bool stream, bool chat)
      : meta_(meta), stream_(stream), chat_(chat), choices_(static_cast<size_t>(std::max(1, meta.choices))) {}
  bool streaming() const override { return stream_; }

  std::string Start(int choice, const GenerationUsage&) override {
    if (!stream_ || !chat_) return "";
    return Chunk(choice, Json{{"role", "assistant"}, {"content", ""}}, Json(), nullptr);
  }

  std::string Events(int choice, const std::vector<OutputEvent>& events,
                     const std::vector<TokenLogprob>& lps) override {
    ChoiceState& c = At(choice);
    if (!stream_) {
      for (const OutputEvent& e : events) Accumulate(c, e);
      if (meta_.logprobs) {
        if (chat_) {
          for (auto& e : ChatLogprobEntries(lps)) c.chat_logprobs.push_back(std::move(e));
        } else {
          c.completion_logprobs.Add(lps, &c.offset);
        }
      }
      return "";
    }
    Json lp;
    if (meta_.logprobs && !lps.empty()) {
      if (chat_) {
        lp = Json{{"content", ChatLogprobEntries(lps)}};
      } else {
        CompletionLogprobs piece;
        piece.Add(lps, &c.offset);
        lp = piece.ToJson();
      }
    }
    std::string out;
    // The logprobs ride on the first chunk of the token's events.
    auto chunk = [&](Json delta) {
      out += Chunk(choice, std::move(delta), lp, nullptr);
      lp = Json();
    };
    for (size_t i = 0; i < events.size(); ++i) {
      const OutputEvent& e = events[i];
      Accumulate(c, e);
      if (!chat_) {
        if (e.kind == OutputEvent::Kind::kContent) chunk(Json(e.text));
        continue;
      }
      switch (e.kind) {
        case OutputEvent::Kind::kContent:
        case OutputEvent::Kind::kReasoning: {
          // Adjacent text of one kind goes in one chunk.
          std::string text = e.text;
          while (i + 1 < events.size() && events[i + 1].kind == e.kind) text += events[++i].text;
          chunk(Json{{e.kind == OutputEvent::Kind::kContent ? "content" : "reasoning_content", text}});
          break;
        }
        case OutputEvent::Kind::kToolCallStart:
          chunk(Json{{"tool_calls", Json::array({Json{{"index", e.index},
                                                      {"id", e.id},
                                                      {"type", "function"},
                                                      {"function", {{"name", e.name}, {"arguments", ""}}}}})}});
          break;
        case OutputEvent::Kind::kToolCallArguments:
          chunk(Json{{"tool_calls", Json::array({Json{{"index", e.index}, {"function", {{"arguments", e.text}}}}})}});
          break;
        default:  // a call's end says nothing; a discarded call cannot be taken back
          break;
      }
    }
    if (!lp.is_null()) chunk(chat_ ? Json{{"content", ""}} : Json(""));
    return out;
  }

  std::string FinishChoice(int choice, FinishReason reason, const std::string&) override {
    ChoiceState& c = At(choice);
    c.finish_reason = OpenAIFinishReason(reason);
    if (c.called && reason != FinishReason::kLength) c.finish_reason = "tool_calls";
    if (!stream_) return "";
    return Chunk(choice, chat_ ? Json::object() : Json(""), Json(), c.finish_reason);
  }

  std::string End(const GenerationUsage& usage) override {
    if (!stream_) {
      Json choices = Json::array();
      for (size_t i = 0; i < choices_.size(); ++i) {
        const ChoiceState& c = choices_[i];
        Json choice = {{"index", i}};
        if (chat_) {
          choice["message"] = MessageJson(c);
          choice["logprobs"] = meta_.logprobs ? Json{{"content", c.chat_logprobs}} : Json();
        } else {
          choice["text"] = c.text;
          choice["logprobs"] = meta_.logprobs ? c.completion_logprobs.ToJson() : Json();
        }
        choice["finish_reason"] = c.finish_reason;
        choices.push_back(std::move(choice));
      }
      Json body = Base(chat_ ? "chat.completion" : "text_completion");
      body["choices"] = std::move(choices);
      body["usage"] = UsageJson(usage);
      return Dump(body);
    }
    std::string out;
    if (meta_.include_usage) {
      Json usage_chunk = Base(ChunkObject());
      usage_chunk["choices"] = Json::array();
      usage_chunk["usage"] = UsageJson(usage);
      out += SseData(Dump(usage_chunk));
    }
    return out + SseData("[DONE]");
  }

  std::string StreamError(const ApiError& e) override { return ErrorEvent(e); }

  std::string KeepAlive(KeepAliveMode mode) override {
    if (mode == KeepAliveMode::kOff) return "";
    if (mode == KeepAliveMode::kComment) return ": keep-alive\n\n";
    return Chunk(0, chat_ ? Json::object() : Json(""), Json(), nullptr);
  }

 private:
  ChoiceState& At(int choice) { return choices_.at(static_cast<size_t>(choice)); }

  static void Accumulate(ChoiceState& c, const OutputEvent& e) {
    switch (e.kind) {
      case OutputEvent::Kind::kContent: c.text += e.text; break;
      case OutputEvent::Kind::kReasoning: c.reasoning += e.text; break;
      case OutputEvent::Kind::kToolCallStart:
        if (c.calls.size() <= e.index) c.calls.resize(e.index + 1);
        c.calls[e.index].id = e.id;
        c.calls[e.index].name = e.name;
        break;
      case OutputEvent::Kind::kToolCallArguments:
        if (e.index < c.calls.size()) c.calls[e.index].arguments += e.text;
        break;
      case OutputEvent::Kind::kToolCallEnd: c.called = true; break;
      case OutputEvent::Kind::kToolCallDiscarded:
        if (e.index < c.calls.size()) c.calls[e.index].discarded = true;
        break;
    }
  }

  // A chat message: content (null beside tool calls when there is none),
  // reasoning_content and tool_calls when there are any.
  static Json MessageJson(const ChoiceState& c) {
    Json calls = Json::array();
    for (const CallState& call : c.calls) {
      if (call.discarded || call.name.empty()) continue;
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    Json m = {{"role", "assistant"}};
    m["content"] = c.text.empty() && !calls.empty() ? Json() : Json(c.text);
    if (!c.reasoning.empty()) m["reasoning_content"] = c.reasoning;
    if (!calls.empty()) m["tool_calls"] = std::move(calls);
    return m;
  }
  const char* ChunkObject() const { return chat_ ? "chat.completion.chunk" : "text_completion"; }
  Json Base(const char* object) const {
    return Json{{"id", meta_.id}, {"object", object}, {"created", meta_.created}, {"model", meta_.model}};
  }
  // `content`: the chat delta object, or the completion's text.
  std::string Chunk(int choice, Json content, const Json& logprobs, const char* finish_reason) const {
    Json c = {{"index", choice}};
    c[chat_ ? "delta" : "text"] = std::move(content);
    c["logprobs"] = logprobs;
    c["finish_reason"] = finish_reason ? Json(finish_reason) : Json();
    Json j = Base(ChunkObject());
    j["choices"] = Json::array({std::move(c)});
    return SseData(Dump(j));
  }

  ResponseMeta meta_;
  bool stream_;
  bool chat_;
  std::vector<ChoiceState> choices_;
};

}  // namespace

std::unique_ptr<ResponseFormatter> MakeChatCompletionsFormatter(const ResponseMeta& meta, bool stream) {
  return std::make_unique<OpenAIFormatter>(meta, stream, /*chat=*/true);
}

std::unique_ptr<ResponseFormatter> MakeCompletionsFormatter(const ResponseMeta& meta, bool stream) {
  return std::make_unique<OpenAIFormatter>(meta, stream, /*chat=*/false);
}

std::string NewResponseId(const std::string& prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* kHex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kHex[rng() & 15];
  return id;
}

std::string SseData(const std::string& data) { return "data: " + data + "\n\n"; }

std::string SseEvent(const std::string& event, const std::string& data) {
  return "event: " + event + "\ndata: " + data + "\n\n";
}

const char* OpenAIFinishReason(FinishReason r) {
  switch (r) {
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
    default: return "stop";
  }
}

const char* AnthropicStopReason(FinishReason r) {
  switch (r) {
    case FinishReason::kLength: return "max_tokens";
    case FinishReason::kStopString: return "stop_sequence";
    default: return "end_turn";
  }
}

}  // namespace llmhost::server
