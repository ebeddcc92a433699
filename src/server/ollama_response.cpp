// Ollama /api/chat and /api/generate bodies: one JSON object, or streamed as
// newline-delimited JSON (application/x-ndjson), each line
//   chat:     {"model", "created_at", "message": {"role": "assistant",
//              "content", "thinking"?, "tool_calls"?}, "done": false}
//   generate: {"model", "created_at", "response", "thinking"?, "done": false}
// and a last line with "done": true, "done_reason" ("stop" / "length") and
// the counts and durations (nanoseconds) Ollama reports. Tool calls come
// whole, in the message of the line after their markup ends, with the
// arguments as an object.
#include <chrono>
#include <ctime>

#include <nlohmann/json.hpp>

#include "server/response_format.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;
using Kind = OutputEvent::Kind;
using Clock = std::chrono::steady_clock;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

std::string OllamaTimestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns));
  return buf;
}

namespace {

int64_t Nanos(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

struct Call {
  std::string name, arguments;
  bool done = false, discarded = false;
};

class OllamaFormatter final : public ResponseFormatter {
 public:
  OllamaFormatter(const ResponseMeta& meta, bool stream, bool chat)
      : meta_(meta), stream_(stream), chat_(chat), begun_(Clock::now()) {}
  bool streaming() const override { return stream_; }
  const char* content_type() const override { return "application/x-ndjson"; }

  std::string Start(int, const GenerationUsage&) override {
    prefilled_ = Clock::now();
    return "";
  }

  std::string Events(int, const std::vector<OutputEvent>& events, const std::vector<TokenLogprob>&) override {
    std::string content, thinking;
    std::vector<size_t> finished;
    for (const OutputEvent& e : events) {
      switch (e.kind) {
        case Kind::kContent: content += e.text; break;
        case Kind::kReasoning: thinking += e.text; break;
        case Kind::kToolCallStart:
          if (calls_.size() <= e.index) calls_.resize(e.index + 1);
          calls_[e.index].name = e.name;
          break;
        case Kind::kToolCallArguments:
          if (e.index < calls_.size()) calls_[e.index].arguments += e.text;
          break;
        case Kind::kToolCallEnd:
          if (e.index < calls_.size()) {
            calls_[e.index].done = true;
            finished.push_back(e.index);
          }
          break;
        case Kind::kToolCallDiscarded:
          if (e.index < calls_.size()) calls_[e.index].discarded = true;
          break;
      }
    }
    if (!stream_) {  // the whole body comes from End()
      content_ += content;
      thinking_ += thinking;
      return "";
    }
    if (content.empty() && thinking.empty() && finished.empty()) return "";
    Json line = Head();
    if (chat_) {
      Json message = {{"role", "assistant"}, {"content", content}};
      if (!thinking.empty()) message["thinking"] = thinking;
      if (!finished.empty()) {
        Json calls = Json::array();
        for (size_t i : finished) calls.push_back(CallJson(calls_[i]));
        message["tool_calls"] = std::move(calls);
      }
      line["message"] = std::move(message);
    } else {
      line["response"] = content;
      if (!thinking.empty()) line["thinking"] = thinking;
    }
    line["done"] = false;
    return Dump(line) + "\n";
  }

  std::string FinishChoice(int, FinishReason reason, const std::string&) override {
    reason_ = reason;
    return "";
  }

  std::string End(const GenerationUsage& usage) override {
    const Clock::time_point end = Clock::now();
    const Clock::time_point prefilled = prefilled_ ? *prefilled_ : end;
    Json last = Head();
    if (chat_) {
      Json message = {{"role", "assistant"}, {"content", stream_ ? "" : content_}};
      if (!stream_ && !thinking_.empty()) message["thinking"] = thinking_;
      if (!stream_) {
        Json calls = Json::array();
        for (const Call& c : calls_)
          if (c.done && !c.discarded) calls.push_back(CallJson(c));
        if (!calls.empty()) message["tool_calls"] = std::move(calls);
      }
      last["message"] = std::move(message);
    } else {
      last["response"] = stream_ ? "" : content_;
      if (!stream_ && !thinking_.empty()) last["thinking"] = thinking_;
    }
    last["done"] = true;
    last["done_reason"] = reason_ == FinishReason::kLength ? "length" : "stop";
    last["total_duration"] = Nanos(end - begun_);
    last["load_duration"] = 0;  // the model was loaded before the request began
    last["prompt_eval_count"] = usage.prompt_tokens;
    last["prompt_eval_duration"] = Nanos(prefilled - begun_);
    last["eval_count"] = usage.completion_tokens;
    last["eval_duration"] = Nanos(end - prefilled);
    return Dump(last) + (stream_ ? "\n" : "");
  }

  std::string StreamError(const ApiError& error) override { return Dump(Json{{"error", error.message}}) + "\n"; }
  std::string KeepAlive(KeepAliveMode) override { return ""; }  // a JSON line per event; no comments exist

 private:
  Json Head() const { return Json{{"model", meta_.model}, {"created_at", OllamaTimestamp()}}; }

  static Json CallJson(const Call& c) {
    Json args = Json::parse(c.arguments, nullptr, /*allow_exceptions=*/false);
    if (!args.is_object()) args = Json::object();
    return Json{{"function", {{"name", c.name}, {"arguments", std::move(args)}}}};
  }

  ResponseMeta meta_;
  bool stream_, chat_;
  Clock::time_point begun_;
  std::optional<Clock::time_point> prefilled_;
  std::string content_, thinking_;
  std::vector<Call> calls_;
  FinishReason reason_ = FinishReason::kStop;
};

}  // namespace

std::unique_ptr<ResponseFormatter> MakeOllamaFormatter(const ResponseMeta& meta, bool stream, bool chat) {
  return std::make_unique<OllamaFormatter>(meta, stream, chat);
}

}  // namespace llmhost::server
