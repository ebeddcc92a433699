#include "server/responses_request.h"

#include <limits>

#include "server/openai_request.h"
#include "server/reasoning_effort.h"
#include "server/structured_output_request.h"
#include "server/tool_schema.h"
#include "util/log.h"

namespace llmhost::server {

namespace {

// The text of a message's content: a string, or parts with text.
MaybeError PartsText(const OJson& content, const std::string& path, std::string* out) {
  out->clear();
  if (content.is_null()) return std::nullopt;
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return BadRequest("'" + path + "' must be a string or an array of parts", path);
  for (size_t i = 0; i < content.size(); ++i) {
    const OJson& part = content[i];
    const std::string pp = IndexPath(path, i);
    if (!part.is_object()) return BadRequest("'" + pp + "' must be an object", pp);
    std::optional<std::string> type, text;
    RETURN_IF_API_ERROR(ReadString(part, "type", pp, &type));
    const std::string t = type.value_or("");
    if (t != "input_text" && t != "output_text" && t != "text" && t != "reasoning_text" && t != "summary_text") {
      return BadRequest("'" + pp + ".type': parts of type '" + t +
                            "' are not supported (the models served read text: input_text, output_text)",
                        pp + ".type");
    }
    RETURN_IF_API_ERROR(ReadString(part, "text", pp, &text));
    if (!text) return BadRequest("'" + pp + ".text' is required", pp + ".text");
    if (!out->empty()) *out += "\n";
    *out += *text;
  }
  return std::nullopt;
}

// Builds the chat messages of `input` onto `messages`.
class InputConverter {
 public:
  explicit InputConverter(OJson* messages) : messages_(messages) {}

  MaybeError Item(const OJson& item, const std::string& path) {
    if (!item.is_object()) return BadRequest("'" + path + "' must be an object", path);
    std::optional<std::string> type;
    RETURN_IF_API_ERROR(ReadString(item, "type", path, &type));
    const std::string t = type.value_or("message");
    if (t == "message") return Message(item, path);
    if (t == "function_call") return FunctionCall(item, path);
    if (t == "function_call_output") return FunctionOutput(item, path);
    if (t == "reasoning") return Reasoning(item, path);
    return BadRequest("'" + path + ".type': input items of type '" + t +
                          "' are not supported (message, function_call, function_call_output, reasoning are)",
                      path + ".type");
  }

 private:
  MaybeError Message(const OJson& item, const std::string& path) {
    std::optional<std::string> role;
    RETURN_IF_API_ERROR(ReadString(item, "role", path, &role));
    if (!role) return BadRequest("'" + path + ".role' is required: user, assistant, system or developer", path + ".role");
    std::string r = *role == "developer" ? "system" : *role;
    if (r != "user" && r != "assistant" && r != "system") {
      return BadRequest("'" + path + ".role' must be user, assistant, system or developer; got '" + *role + "'",
                        path + ".role");
    }
    std::string text;
    auto content = item.find("content");
    RETURN_IF_API_ERROR(PartsText(content == item.end() ? OJson() : *content, path + ".content", &text));
    OJson m = {{"role", r}, {"content", text}};
    if (r == "assistant" && !reasoning_.empty()) {
      m["reasoning_content"] = reasoning_;
      reasoning_.clear();
    }
    messages_->push_back(std::move(m));
    return std::nullopt;
  }

  MaybeError FunctionCall(const OJson& item, const std::string& path) {
    std::optional<std::string> call_id, name, arguments;
    RETURN_IF_API_ERROR(ReadString(item, "call_id", path, &call_id));
    RETURN_IF_API_ERROR(ReadString(item, "name", path, &name));
    RETURN_IF_API_ERROR(ReadString(item, "arguments", path, &arguments));
    if (!call_id || call_id->empty()) return BadRequest("'" + path + ".call_id' is required", path + ".call_id");
    if (!name || name->empty()) return BadRequest("'" + path + ".name' is required", path + ".name");
    OJson call = {{"id", *call_id},
                  {"type", "function"},
                  {"function", {{"name", *name}, {"arguments", ToolArgumentsObject(OJson(arguments.value_or("{}")))}}}};
    // Calls of one turn, and the text before them, are one assistant message.
    if (messages_->empty() || messages_->back()["role"] != "assistant") {
      messages_->push_back({{"role", "assistant"}, {"content", ""}});
    }
    OJson& m = messages_->back();
    if (!reasoning_.empty()) {
      m["reasoning_content"] = reasoning_;
      reasoning_.clear();
    }
    if (!m.contains("tool_calls")) m["tool_calls"] = OJson::array();
    m["tool_calls"].push_back(std::move(call));
    return std::nullopt;
  }

  MaybeError FunctionOutput(const OJson& item, const std::string& path) {
    std::optional<std::string> call_id;
    RETURN_IF_API_ERROR(ReadString(item, "call_id", path, &call_id));
    if (!call_id || call_id->empty()) return BadRequest("'" + path + ".call_id' is required", path + ".call_id");
    auto output = item.find("output");
    if (output == item.end() || output->is_null()) return BadRequest("'" + path + ".output' is required", path + ".output");
    std::string text;
    RETURN_IF_API_ERROR(PartsText(*output, path + ".output", &text));
    messages_->push_back({{"role", "tool"}, {"tool_call_id", *call_id}, {"content", text}});
    return std::nullopt;
  }

  // Reasoning text (content), else its summary, for the assistant turn that follows.
  MaybeError Reasoning(const OJson& item, const std::string& path) {
    std::string text;
    for (const char* field : {"content", "summary"}) {
      auto it = item.find(field);
      if (it == item.end() || it->is_null()) continue;
      RETURN_IF_API_ERROR(PartsText(*it, path + "." + field, &text));
      if (!text.empty()) break;
    }
    if (!reasoning_.empty() && !text.empty()) reasoning_ += "\n";
    reasoning_ += text;
    return std::nullopt;
  }

  OJson* messages_;
  std::string reasoning_;
};

// Function tools, as OpenAI chat tools; other types are left out (logged).
MaybeError ReadResponseTools(const OJson& body, InferenceRequest* out) {
  auto tools = body.find("tools");
  if (tools == body.end() || tools->is_null()) return std::nullopt;
  if (!tools->is_array()) return BadRequest("'tools' must be an array", "tools");
  OJson chat_tools = OJson::array();
  std::string skipped;
  for (size_t i = 0; i < tools->size(); ++i) {
    const OJson& t = (*tools)[i];
    const std::string tp = IndexPath("tools", i);
    if (!t.is_object()) return BadRequest("'" + tp + "' must be an object", tp);
    std::optional<std::string> type, name, description;
    RETURN_IF_API_ERROR(ReadString(t, "type", tp, &type));
    if (!type) return BadRequest("'" + tp + ".type' is required", tp + ".type");
    if (*type != "function") {
      skipped += (skipped.empty() ? "" : ", ") + *type;
      continue;
    }
    RETURN_IF_API_ERROR(ReadString(t, "name", tp, &name));
    if (!name || name->empty()) return BadRequest("'" + tp + ".name' is required", tp + ".name");
    RETURN_IF_API_ERROR(ReadString(t, "description", tp, &description));
    OJson fn = {{"name", *name}};
    if (description) fn["description"] = *description;
    auto params = t.find("parameters");
    if (params != t.end() && !params->is_null()) {
      RETURN_IF_API_ERROR(CheckToolSchema(*params, tp + ".parameters"));
      fn["parameters"] = *params;
    }
    chat_tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  if (!skipped.empty()) LOG_INFO("http: /v1/responses: tools of types " << skipped << " left out of the prompt");
  if (!chat_tools.empty()) out->tools = std::move(chat_tools);
  return std::nullopt;
}

MaybeError ReadResponseToolChoice(const OJson& body, InferenceRequest* out) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return std::nullopt;
  ToolChoice& c = out->tool_choice;
  if (it->is_string() && *it == "none") {
    c.mode = ToolChoice::kNone;
  } else if (it->is_string() && *it == "auto") {
    c.mode = ToolChoice::kAuto;
  } else if (it->is_string() && *it == "required") {
    if (!out->tools.is_array()) return BadRequest("'tool_choice' requires function tools, but the request has none", "tool_choice");
    c.mode = ToolChoice::kRequired;
  } else if (it->is_object()) {
    // {"type": "function", "name": ...}: that function.
    std::optional<std::string> type, name;
    RETURN_IF_API_ERROR(ReadString(*it, "type", "tool_choice", &type));
    RETURN_IF_API_ERROR(ReadString(*it, "name", "tool_choice", &name));
    if (type.value_or("") != "function" || !name || name->empty()) {
      return BadRequest("'tool_choice' as an object must be {\"type\": \"function\", \"name\": ...}", "tool_choice");
    }
    bool known = false;
    for (const OJson& t : out->tools.is_array() ? out->tools : OJson::array()) known |= t["function"]["name"] == *name;
    if (!known) return BadRequest("'tool_choice.name': '" + *name + "' is not one of the request's function tools", "tool_choice.name");
    c.mode = ToolChoice::kRequired;
    c.names = {*name};
  } else {
    return BadRequest("'tool_choice' must be \"none\", \"auto\", \"required\" or an object naming a tool", "tool_choice");
  }
  return std::nullopt;
}

MaybeError ReadReasoning(const OJson& body, InferenceRequest* out) {
  auto it = body.find("reasoning");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return BadRequest("'reasoning' must be an object such as {\"effort\": \"medium\"}", "reasoning");
  std::optional<std::string> effort;
  RETURN_IF_API_ERROR(ReadString(*it, "effort", "reasoning", &effort));
  if (!effort) return std::nullopt;
  return ApplyReasoningEffort(*effort, "reasoning.effort", out);
}

}  // namespace

MaybeError ParseResponsesRequest(const OJson& body, const ResponseStore& store, InferenceRequest* out) {
  out->api = ApiKind::kResponses;
  out->prompt_kind = PromptKind::kChat;
  std::optional<std::string> model, instructions, previous;
  RETURN_IF_API_ERROR(ReadString(body, "model", "", &model));
  if (!model || model->empty()) return BadRequest("'model' is required: the id of a model (GET /v1/models lists them)", "model");
  out->model = *model;
  std::optional<bool> stream, store_it, parallel;
  RETURN_IF_API_ERROR(ReadBool(body, "stream", "", &stream));
  RETURN_IF_API_ERROR(ReadBool(body, "store", "", &store_it));
  RETURN_IF_API_ERROR(ReadBool(body, "parallel_tool_calls", "", &parallel));
  out->stream = stream.value_or(false);
  out->tool_choice.parallel = parallel.value_or(true);
  RETURN_IF_API_ERROR(ReadString(body, "instructions", "", &instructions));
  RETURN_IF_API_ERROR(ReadString(body, "previous_response_id", "", &previous));

  OJson conversation = OJson::array();
  if (previous && !previous->empty()) {
    std::optional<StoredResponse> prior = store.Get(*previous);
    if (!prior) {
      return BadRequest("Previous response with id '" + *previous + "' not found (responses are kept in memory, "
                        "the most recent " + std::to_string(ResponseStore::kMaxResponses) + ", and only with store)",
                        "previous_response_id");
    }
    conversation = std::move(prior->conversation);
  }
  auto input = body.find("input");
  if (input == body.end() || input->is_null()) return BadRequest("'input' is required: a string or an array of items", "input");
  if (input->is_string()) {
    conversation.push_back({{"role", "user"}, {"content", input->get<std::string>()}});
  } else if (input->is_array()) {
    InputConverter convert(&conversation);
    for (size_t i = 0; i < input->size(); ++i) RETURN_IF_API_ERROR(convert.Item((*input)[i], IndexPath("input", i)));
  } else {
    return BadRequest("'input' must be a string or an array of items, got " + JsonTypeName(*input), "input");
  }
  if (conversation.empty()) return BadRequest("'input' has no items", "input");
  out->messages = OJson::array();
  if (instructions && !instructions->empty()) out->messages.push_back({{"role", "system"}, {"content", *instructions}});
  for (const OJson& m : conversation) out->messages.push_back(m);
  out->responses_conversation = std::move(conversation);

  RETURN_IF_API_ERROR(ReadResponseTools(body, out));
  RETURN_IF_API_ERROR(ReadResponseToolChoice(body, out));
  ApplyToolChoice(out);
  RETURN_IF_API_ERROR(ReadReasoning(body, out));
  RETURN_IF_API_ERROR(ReadResponsesTextFormat(body, &out->constraint));
  SamplingRequest& s = out->sampling;
  RETURN_IF_API_ERROR(ReadInteger(body, "max_output_tokens", "", 1, std::numeric_limits<int32_t>::max(), &s.max_tokens));
  RETURN_IF_API_ERROR(ReadNumber(body, "temperature", "", 0, 2, &s.temperature));
  RETURN_IF_API_ERROR(ReadNumber(body, "top_p", "", 0, 1, &s.top_p));

  // What the response object repeats back.
  OJson echo = OJson::object();
  echo["instructions"] = instructions ? OJson(*instructions) : OJson();
  echo["max_output_tokens"] = s.max_tokens ? OJson(*s.max_tokens) : OJson();
  echo["parallel_tool_calls"] = out->tool_choice.parallel;
  echo["previous_response_id"] = previous ? OJson(*previous) : OJson();
  auto reasoning = body.find("reasoning");
  echo["reasoning"] = reasoning != body.end() && reasoning->is_object() ? *reasoning : OJson{{"effort", nullptr}, {"summary", nullptr}};
  echo["store"] = store_it.value_or(true);
  echo["temperature"] = s.temperature ? OJson(*s.temperature) : OJson(1.0);
  auto tc = body.find("tool_choice");
  echo["tool_choice"] = tc != body.end() && !tc->is_null() ? *tc : OJson("auto");
  auto tools = body.find("tools");
  echo["tools"] = tools != body.end() && tools->is_array() ? *tools : OJson::array();
  echo["top_p"] = s.top_p ? OJson(*s.top_p) : OJson(1.0);
  auto text = body.find("text");
  echo["text"] = text != body.end() && text->is_object() && text->contains("format") ? *text
                                                                                    : OJson{{"format", {{"type", "text"}}}};
  echo["truncation"] = "disabled";
  auto metadata = body.find("metadata");
  echo["metadata"] = metadata != body.end() && metadata->is_object() ? *metadata : OJson::object();
  out->responses_echo = std::move(echo);
  return std::nullopt;
}

}  // namespace llmhost::server
