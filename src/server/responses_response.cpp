// OpenAI Responses objects and stream events.
//
// Output items follow the output in order: reasoning ({content:
// [reasoning_text]}), message ({content: [output_text]}), function_call
// ({call_id, name, arguments}). Streamed: response.created,
// response.in_progress, then per item output_item.added, its part's
// content_part.added, deltas (reasoning_text / output_text /
// function_call_arguments), their .done, content_part.done,
// output_item.done; then response.completed, or response.incomplete
// (max_output_tokens), or response.failed on an error. Every event carries
// a sequence_number from 0.
#include <nlohmann/json.hpp>

#include "server/response_format.h"

namespace llmhost::server {

namespace {

using Json = nlohmann::ordered_json;
using Kind = OutputEvent::Kind;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

struct Item {
  enum Type { kReasoning, kMessage, kFunctionCall } type = kMessage;
  std::string id;
  std::string text;  // reasoning, message text, or the call's arguments
  std::string call_id, name;
  size_t call = 0;  // kFunctionCall: the call's API index
  bool done = false, discarded = false;
};

class ResponsesFormatter final : public ResponseFormatter {
 public:
  ResponsesFormatter(const ResponseMeta& meta, bool stream, Json echo, ResponseCompleted on_complete)
      : meta_(meta), stream_(stream), echo_(std::move(echo)), on_complete_(std::move(on_complete)) {}
  bool streaming() const override { return stream_; }

  std::string Start(int, const GenerationUsage&) override {
    if (!stream_) return "";
    Json r = Response("in_progress", nullptr);
    std::string out = Event("response.created", {{"response", r}});
    return out + Event("response.in_progress", {{"response", r}});
  }

  std::string Events(int, const std::vector<OutputEvent>& events, const std::vector<TokenLogprob>&) override {
    std::string out;
    bool reasoned = false;
    for (const OutputEvent& e : events) {
      switch (e.kind) {
        case Kind::kReasoning:
        case Kind::kContent: {
          const Item::Type type = e.kind == Kind::kReasoning ? Item::kReasoning : Item::kMessage;
          reasoned |= type == Item::kReasoning;
          if (!Open() || items_.back().type != type) out += Add(Item{type});
          Item& it = items_.back();
          it.text += e.text;
          if (stream_) {
            out += Event(type == Item::kReasoning ? "response.reasoning_text.delta" : "response.output_text.delta",
                         Part(it, {{"delta", e.text}}, type == Item::kMessage));
          }
          break;
        }
        case Kind::kToolCallStart: {
          Item it{Item::kFunctionCall};
          it.call_id = e.id;
          it.name = e.name;
          it.call = e.index;
          out += Add(std::move(it));
          break;
        }
        case Kind::kToolCallArguments:
          if (!OpenCall(e.index)) break;
          items_.back().text += e.text;
          if (stream_) {
            out += Event("response.function_call_arguments.delta",
                         {{"item_id", items_.back().id}, {"output_index", items_.size() - 1}, {"delta", e.text}});
          }
          break;
        case Kind::kToolCallEnd:
          if (OpenCall(e.index)) out += Close();
          break;
        case Kind::kToolCallDiscarded:
          if (!OpenCall(e.index)) break;
          items_.back().discarded = true;
          out += Close();
          break;
      }
    }
    if (reasoned) ++reasoning_tokens_;
    return out;
  }

  std::string FinishChoice(int, FinishReason reason, const std::string&) override {
    reason_ = reason;
    return "";
  }

  std::string End(const GenerationUsage& usage) override {
    std::string out = Close();
    const bool incomplete = reason_ == FinishReason::kLength;
    Json r = Response(incomplete ? "incomplete" : "completed", &usage);
    if (on_complete_) on_complete_(r, AssistantMessage());
    if (!stream_) return Dump(r);
    return out + Event(incomplete ? "response.incomplete" : "response.completed", {{"response", std::move(r)}});
  }

  std::string StreamError(const ApiError& e) override {
    Json r = Response("failed", nullptr);
    r["error"] = {{"code", e.code.empty() ? "server_error" : e.code}, {"message", e.message}};
    return Event("response.failed", {{"response", std::move(r)}});
  }

  // The Responses stream has no no-op event: a comment, which clients skip.
  std::string KeepAlive(KeepAliveMode mode) override { return mode == KeepAliveMode::kOff ? "" : ": keep-alive\n\n"; }

 private:
  bool Open() const { return !items_.empty() && !items_.back().done; }
  bool OpenCall(size_t index) const {
    return Open() && items_.back().type == Item::kFunctionCall && items_.back().call == index;
  }

  std::string Event(const char* type, Json fields) {
    Json j = {{"type", type}, {"sequence_number", seq_++}};
    for (auto& [k, v] : fields.items()) j[k] = std::move(v);
    return SseEvent(type, Dump(j));
  }

  // A text delta's or done event's addressing fields.
  Json Part(const Item& it, Json extra, bool logprobs) const {
    Json j = {{"item_id", it.id}, {"output_index", items_.size() - 1}, {"content_index", 0}};
    for (auto& [k, v] : extra.items()) j[k] = std::move(v);
    if (logprobs) j["logprobs"] = Json::array();
    return j;
  }

  static Json PartJson(const Item& it) {
    if (it.type == Item::kReasoning) return {{"type", "reasoning_text"}, {"text", it.text}};
    return {{"type", "output_text"}, {"text", it.text}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
  }

  static Json ItemJson(const Item& it) {
    const char* status = it.done ? "completed" : "in_progress";
    switch (it.type) {
      case Item::kReasoning: {
        Json content = it.done ? Json::array({PartJson(it)}) : Json::array();
        return {{"id", it.id}, {"type", "reasoning"}, {"summary", Json::array()}, {"content", std::move(content)}};
      }
      case Item::kMessage: {
        Json content = it.done ? Json::array({PartJson(it)}) : Json::array();
        return {{"id", it.id}, {"type", "message"}, {"status", status}, {"role", "assistant"},
                {"content", std::move(content)}};
      }
      case Item::kFunctionCall:
        return {{"id", it.id},           {"type", "function_call"}, {"status", status},
                {"call_id", it.call_id}, {"name", it.name},         {"arguments", it.done ? it.text : ""}};
    }
    return Json();
  }

  // Ends the open item (if any) and starts `it`.
  std::string Add(Item it) {
    std::string out = Close();
    it.id = NewResponseId(it.type == Item::kReasoning ? "rs_" : it.type == Item::kMessage ? "msg_" : "fc_");
    items_.push_back(std::move(it));
    if (!stream_) return out;
    const Item& n = items_.back();
    const size_t index = items_.size() - 1;
    out += Event("response.output_item.added", {{"output_index", index}, {"item", ItemJson(n)}});
    if (n.type != Item::kFunctionCall) {
      Item empty = n;
      empty.text.clear();
      out += Event("response.content_part.added",
                   {{"item_id", n.id}, {"output_index", index}, {"content_index", 0}, {"part", PartJson(empty)}});
    }
    return out;
  }

  std::string Close() {
    if (!Open()) return "";
    Item& it = items_.back();
    it.done = true;
    if (!stream_) return "";
    const size_t index = items_.size() - 1;
    std::string out;
    if (it.type == Item::kFunctionCall) {
      out += Event("response.function_call_arguments.done",
                   {{"item_id", it.id}, {"output_index", index}, {"arguments", it.text}});
    } else {
      out += Event(it.type == Item::kReasoning ? "response.reasoning_text.done" : "response.output_text.done",
                   Part(it, {{"text", it.text}}, it.type == Item::kMessage));
      out += Event("response.content_part.done",
                   {{"item_id", it.id}, {"output_index", index}, {"content_index", 0}, {"part", PartJson(it)}});
    }
    Json item = ItemJson(it);
    if (it.discarded) item["status"] = "incomplete";
    return out + Event("response.output_item.done", {{"output_index", index}, {"item", std::move(item)}});
  }

  Json Response(const char* status, const GenerationUsage* usage) const {
    Json r = {{"id", meta_.id},       {"object", "response"}, {"created_at", meta_.created},
              {"status", status},     {"error", nullptr},     {"incomplete_details", nullptr},
              {"model", meta_.model}, {"output", Json::array()}};
    if (std::string(status) == "incomplete") r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    for (const Item& it : items_) {
      if (usage && !it.discarded) r["output"].push_back(ItemJson(it));
    }
    for (auto& [k, v] : echo_.items()) r[k] = v;
    if (usage) {
      r["usage"] = {{"input_tokens", usage->prompt_tokens},
                    {"input_tokens_details", {{"cached_tokens", usage->cached_tokens}}},
                    {"output_tokens", usage->completion_tokens},
                    {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens_}}},
                    {"total_tokens", usage->prompt_tokens + usage->completion_tokens}};
    } else {
      r["usage"] = nullptr;
    }
    return r;
  }

  // The output as the chat template sees an assistant turn.
  Json AssistantMessage() const {
    Json m = {{"role", "assistant"}, {"content", ""}};
    std::string reasoning;
    Json calls = Json::array();
    for (const Item& it : items_) {
      if (it.discarded) continue;
      if (it.type == Item::kMessage) m["content"] = m["content"].get<std::string>() + it.text;
      if (it.type == Item::kReasoning) reasoning += it.text;
      if (it.type == Item::kFunctionCall) {
        Json args = Json::parse(it.text, nullptr, /*allow_exceptions=*/false);
        if (!args.is_object()) args = Json::object();
        calls.push_back({{"id", it.call_id}, {"type", "function"}, {"function", {{"name", it.name}, {"arguments", args}}}});
      }
    }
    if (!reasoning.empty()) m["reasoning_content"] = reasoning;
    if (!calls.empty()) m["tool_calls"] = std::move(calls);
    return m;
  }

  ResponseMeta meta_;
  bool stream_;
  Json echo_;
  ResponseCompleted on_complete_;
  std::vector<Item> items_;
  int64_t seq_ = 0;
  int64_t reasoning_tokens_ = 0;  // generated tokens whose text went to reasoning
  FinishReason reason_ = FinishReason::kStop;
};

}  // namespace

std::unique_ptr<ResponseFormatter> MakeResponsesFormatter(const ResponseMeta& meta, bool stream, Json echo,
                                                          ResponseCompleted on_complete) {
  return std::make_unique<ResponsesFormatter>(meta, stream, std::move(echo), std::move(on_complete));
}

}  // namespace llmhost::server
