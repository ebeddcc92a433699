// OpenAI chat.completion(.chunk) and text_completion bodies.
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

class ChatFormatter final : public ResponseFormatter {
 public:
  ChatFormatter(const ResponseMeta& meta, bool stream) : meta_(meta), stream_(stream) {}
  bool streaming() const override { return stream_; }

  std::string Start(const GenerationUsage&) override {
    if (!stream_) return "";
    return Chunk(Json{{"role", "assistant"}, {"content", ""}}, nullptr, nullptr);
  }

  std::string Delta(const std::string& text, const std::vector<TokenLogprob>& lps) override {
    if (!stream_) {
      text_ += text;
      if (meta_.logprobs) {
        for (const auto& e : ChatLogprobEntries(lps)) logprobs_.push_back(e);
      }
      return "";
    }
    if (text.empty() && (lps.empty() || !meta_.logprobs)) return "";
    Json lp = meta_.logprobs ? Json{{"content", ChatLogprobEntries(lps)}} : Json();
    return Chunk(Json{{"content", text}}, nullptr, &lp);
  }

  std::string Finish(const GenerationFinish& f) override {
    if (!stream_) {
      Json choice = {{"index", 0},
                     {"message", {{"role", "assistant"}, {"content", text_}}},
                     {"logprobs", meta_.logprobs ? Json{{"content", logprobs_}} : Json()},
                     {"finish_reason", OpenAIFinishReason(f.reason)}};
      Json body = {{"id", meta_.id},
                   {"object", "chat.completion"},
                   {"created", meta_.created},
                   {"model", meta_.model},
                   {"choices", Json::array({std::move(choice)})},
                   {"usage", UsageJson(f.usage)}};
      return Dump(body);
    }
    const char* reason = OpenAIFinishReason(f.reason);
    std::string out = Chunk(Json::object(), reason, nullptr);
    if (meta_.include_usage) {
      Json usage_chunk = Base();
      usage_chunk["choices"] = Json::array();
      usage_chunk["usage"] = UsageJson(f.usage);
      out += SseData(Dump(usage_chunk));
    }
    return out + SseData("[DONE]");
  }

  std::string StreamError(const ApiError& e) override { return ErrorEvent(e); }

  std::string KeepAlive(KeepAliveMode mode) override {
    if (mode == KeepAliveMode::kOff) return "";
    if (mode == KeepAliveMode::kComment) return ": keep-alive\n\n";
    return Chunk(Json::object(), nullptr, nullptr);
  }

 private:
  Json Base() const {
    return Json{{"id", meta_.id},
                {"object", "chat.completion.chunk"},
                {"created", meta_.created},
                {"model", meta_.model}};
  }
  std::string Chunk(Json delta, const char* finish_reason, const Json* logprobs) const {
    Json j = Base();
    j["choices"] = Json::array({Json{{"index", 0},
                                     {"delta", std::move(delta)},
                                     {"logprobs", logprobs ? *logprobs : Json()},
                                     {"finish_reason", finish_reason ? Json(finish_reason) : Json()}}});
    return SseData(Dump(j));
  }

  ResponseMeta meta_;
  bool stream_;
  std::string text_;
  Json logprobs_ = Json::array();
};

class CompletionFormatter final : public ResponseFormatter {
 public:
  CompletionFormatter(const ResponseMeta& meta, bool stream) : meta_(meta), stream_(stream) {}
  bool streaming() const override { return stream_; }

  std::string Start(const GenerationUsage&) override { return ""; }

  std::string Delta(const std::string& text, const std::vector<TokenLogprob>& lps) override {
    if (!stream_) {
      text_ += text;
      if (meta_.logprobs) logprobs_.Add(lps, &offset_);
      return "";
    }
    if (text.empty() && (lps.empty() || !meta_.logprobs)) return "";
    Json lp;
    if (meta_.logprobs) {
      CompletionLogprobs piece;
      piece.Add(lps, &offset_);
      lp = piece.ToJson();
    }
    return Chunk(text, lp, nullptr);
  }

  std::string Finish(const GenerationFinish& f) override {
    if (!stream_) {
      Json choice = {{"index", 0},
                     {"text", text_},
                     {"logprobs", meta_.logprobs ? logprobs_.ToJson() : Json()},
                     {"finish_reason", OpenAIFinishReason(f.reason)}};
      Json body = {{"id", meta_.id},
                   {"object", "text_completion"},
                   {"created", meta_.created},
                   {"model", meta_.model},
                   {"choices", Json::array({std::move(choice)})},
                   {"usage", UsageJson(f.usage)}};
      return Dump(body);
    }
    std::string out = Chunk("", Json(), OpenAIFinishReason(f.reason));
    if (meta_.include_usage) {
      Json usage_chunk = Base();
      usage_chunk["choices"] = Json::array();
      usage_chunk["usage"] = UsageJson(f.usage);
      out += SseData(Dump(usage_chunk));
    }
    return out + SseData("[DONE]");
  }

  std::string StreamError(const ApiError& e) override { return ErrorEvent(e); }

  std::string KeepAlive(KeepAliveMode mode) override {
    if (mode == KeepAliveMode::kOff) return "";
    if (mode == KeepAliveMode::kComment) return ": keep-alive\n\n";
    return Chunk("", Json(), nullptr);
  }

 private:
  Json Base() const {
    return Json{{"id", meta_.id},
                {"object", "text_completion"},
                {"created", meta_.created},
                {"model", meta_.model}};
  }
  std::string Chunk(const std::string& text, const Json& logprobs, const char* finish_reason) const {
    Json j = Base();
    j["choices"] = Json::array({Json{{"index", 0},
                                     {"text", text},
                                     {"logprobs", logprobs},
                                     {"finish_reason", finish_reason ? Json(finish_reason) : Json()}}});
    return SseData(Dump(j));
  }

  ResponseMeta meta_;
  bool stream_;
  std::string text_;
  CompletionLogprobs logprobs_;
  int64_t offset_ = 0;
};

}  // namespace

std::unique_ptr<ResponseFormatter> MakeChatCompletionsFormatter(const ResponseMeta& meta, bool stream) {
  return std::make_unique<ChatFormatter>(meta, stream);
}

std::unique_ptr<ResponseFormatter> MakeCompletionsFormatter(const ResponseMeta& meta, bool stream) {
  return std::make_unique<CompletionFormatter>(meta, stream);
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
