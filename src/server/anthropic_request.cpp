#include "server/anthropic_request.h"

#include <limits>

namespace llmhost::server {

namespace {

constexpr size_t kMaxStopSequences = 64;
constexpr std::string_view kBillingHeader = "x-anthropic-billing-header:";

void AppendText(std::string* out, const std::string& text) {
  if (!out->empty()) *out += "\n";
  *out += text;
}

// Text of a tool_result's content: a string, or blocks (text kept; others
// replaced by a note, since a tool result is part of an ongoing agent turn).
MaybeError ToolResultText(const OJson& content, const std::string& path, std::string* out) {
  out->clear();
  if (content.is_null()) return std::nullopt;
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return BadRequest("'" + path + "' must be a string or an array of blocks", path);
  for (size_t i = 0; i < content.size(); ++i) {
    const OJson& b = content[i];
    const std::string bp = IndexPath(path, i);
    if (!b.is_object()) return BadRequest("'" + bp + "' must be a content block object", bp);
    std::optional<std::string> type, text;
    RETURN_IF_API_ERROR(ReadString(b, "type", bp, &type));
    if (type.value_or("text") == "text") {
      RETURN_IF_API_ERROR(ReadString(b, "text", bp, &text));
      AppendText(out, text.value_or(""));
    } else {
      AppendText(out, "[" + *type + " omitted: this model reads text only]");
    }
  }
  return std::nullopt;
}

// One Anthropic message → one or more template messages appended to `out`.
MaybeError ConvertMessage(const OJson& m, const std::string& path, OJson* out) {
  if (!m.is_object()) return BadRequest("'" + path + "' must be an object with a role", path);
  std::optional<std::string> role;
  RETURN_IF_API_ERROR(ReadString(m, "role", path, &role));
  if (!role) return BadRequest("'" + path + ".role' is required", path + ".role");
  if (*role != "user" && *role != "assistant" && *role != "system") {
    return BadRequest("'" + path + ".role' must be user, assistant or system; got '" + *role + "'",
                      path + ".role");
  }
  auto content_it = m.find("content");
  const std::string cpath = path + ".content";
  if (content_it == m.end() || content_it->is_null()) {
    return BadRequest("'" + cpath + "' is required", cpath);
  }
  const OJson& content = *content_it;
  if (content.is_string()) {
    out->push_back({{"role", *role}, {"content", content.get<std::string>()}});
    return std::nullopt;
  }
  if (!content.is_array()) {
    return BadRequest("'" + cpath + "' must be a string or an array of content blocks, got " +
                          JsonTypeName(content),
                      cpath);
  }
  const bool assistant = *role == "assistant";
  std::string text, reasoning;
  bool have_text = false;
  OJson tool_calls = OJson::array();
  // User turns: runs of text become one user message; each tool_result a
  // "tool" message, in block order.
  auto flush_text = [&] {
    if (!assistant && have_text) out->push_back({{"role", *role}, {"content", text}});
    if (!assistant) {
      text.clear();
      have_text = false;
    }
  };
  for (size_t i = 0; i < content.size(); ++i) {
    const OJson& b = content[i];
    const std::string bp = IndexPath(cpath, i);
    if (!b.is_object()) return BadRequest("'" + bp + "' must be a content block object", bp);
    std::optional<std::string> type;
    RETURN_IF_API_ERROR(ReadString(b, "type", bp, &type));
    if (!type) return BadRequest("'" + bp + ".type' is required", bp + ".type");
    if (*type == "text") {
      std::optional<std::string> t;
      RETURN_IF_API_ERROR(ReadString(b, "text", bp, &t));
      if (!t) return BadRequest("'" + bp + ".text' is required in a text block", bp + ".text");
      AppendText(&text, *t);
      have_text = true;
    } else if (*type == "tool_use" && assistant) {
      std::optional<std::string> id, name;
      RETURN_IF_API_ERROR(ReadString(b, "id", bp, &id));
      RETURN_IF_API_ERROR(ReadString(b, "name", bp, &name));
      if (!name) return BadRequest("'" + bp + ".name' is required in a tool_use block", bp + ".name");
      auto input = b.find("input");
      OJson args = input == b.end() || input->is_null() ? OJson::object() : *input;
      OJson call = OJson::object();
      if (id) call["id"] = *id;
      call["type"] = "function";
      call["function"] = {{"name", *name}, {"arguments", std::move(args)}};
      tool_calls.push_back(std::move(call));
    } else if (*type == "tool_result" && !assistant) {
      flush_text();
      std::optional<std::string> id;
      RETURN_IF_API_ERROR(ReadString(b, "tool_use_id", bp, &id));
      std::string result;
      auto rc = b.find("content");
      RETURN_IF_API_ERROR(ToolResultText(rc == b.end() ? OJson() : *rc, bp + ".content", &result));
      OJson msg = {{"role", "tool"}, {"content", result}};
      if (id) msg["tool_call_id"] = *id;
      out->push_back(std::move(msg));
    } else if (*type == "thinking") {
      std::optional<std::string> t;
      RETURN_IF_API_ERROR(ReadString(b, "thinking", bp, &t));
      if (assistant && t) AppendText(&reasoning, *t);
    } else if (*type == "image" || *type == "document") {
      return BadRequest("'" + bp + "': " + *type +
                            " blocks are not supported (the models served here read text only)",
                        bp + ".type");
    }
    // Other block types (redacted_thinking, server tool blocks, ...) carry
    // nothing a local text model can use: skipped.
  }
  if (assistant) {
    OJson msg = {{"role", "assistant"}, {"content", text}};
    if (!tool_calls.empty()) msg["tool_calls"] = std::move(tool_calls);
    if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
    out->push_back(std::move(msg));
  } else {
    flush_text();
  }
  return std::nullopt;
}

MaybeError ReadSystem(const OJson& body, OJson* messages) {
  auto sys = body.find("system");
  if (sys == body.end() || sys->is_null()) return std::nullopt;
  std::string text;
  if (sys->is_string()) {
    text = sys->get<std::string>();
  } else if (sys->is_array()) {
    for (size_t i = 0; i < sys->size(); ++i) {
      const OJson& b = (*sys)[i];
      const std::string bp = IndexPath("system", i);
      if (!b.is_object()) return BadRequest("'" + bp + "' must be a text block object", bp);
      std::optional<std::string> type, t;
      RETURN_IF_API_ERROR(ReadString(b, "type", bp, &type));
      if (type && *type != "text") {
        return BadRequest("'" + bp + ".type' must be \"text\", got '" + *type + "'", bp + ".type");
      }
      RETURN_IF_API_ERROR(ReadString(b, "text", bp, &t));
      if (!t) return BadRequest("'" + bp + ".text' is required", bp + ".text");
      if (t->compare(0, kBillingHeader.size(), kBillingHeader) == 0) continue;
      AppendText(&text, *t);
    }
  } else {
    return BadRequest("'system' must be a string or an array of text blocks, got " + JsonTypeName(*sys),
                      "system");
  }
  messages->push_back({{"role", "system"}, {"content", text}});
  return std::nullopt;
}

MaybeError ReadTools(const OJson& body, OJson* tools) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return BadRequest("'tools' must be an array", "tools");
  OJson out = OJson::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const OJson& t = (*it)[i];
    const std::string tp = IndexPath("tools", i);
    if (!t.is_object()) return BadRequest("'" + tp + "' must be an object", tp);
    std::optional<std::string> type, name, description;
    RETURN_IF_API_ERROR(ReadString(t, "type", tp, &type));
    if (type && *type != "custom") continue;  // server tools (web search, ...) have no schema to render
    RETURN_IF_API_ERROR(ReadString(t, "name", tp, &name));
    if (!name || name->empty()) return BadRequest("'" + tp + ".name' is required", tp + ".name");
    RETURN_IF_API_ERROR(ReadString(t, "description", tp, &description));
    OJson fn = OJson::object();
    fn["name"] = *name;
    if (description) fn["description"] = *description;
    auto schema = t.find("input_schema");
    if (schema != t.end() && !schema->is_null()) {
      if (!schema->is_object()) return BadRequest("'" + tp + ".input_schema' must be an object", tp + ".input_schema");
      fn["parameters"] = *schema;
    } else {
      fn["parameters"] = {{"type", "object"}, {"properties", OJson::object()}};
    }
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  if (!out.empty()) *tools = std::move(out);
  return std::nullopt;
}

}  // namespace

MaybeError ParseMessagesRequest(const OJson& body, bool count_only, InferenceRequest* out) {
  out->api = count_only ? ApiKind::kCountTokens : ApiKind::kMessages;
  out->prompt_kind = PromptKind::kChat;
  std::optional<std::string> model;
  RETURN_IF_API_ERROR(ReadString(body, "model", "", &model));
  if (!model || model->empty()) return BadRequest("model: Field required", "model");
  out->model = *model;
  auto messages = body.find("messages");
  if (messages == body.end() || messages->is_null()) return BadRequest("messages: Field required", "messages");
  if (!messages->is_array()) return BadRequest("messages: must be an array, got " + JsonTypeName(*messages), "messages");
  if (messages->empty()) return BadRequest("messages: at least one message is required", "messages");
  out->messages = OJson::array();
  RETURN_IF_API_ERROR(ReadSystem(body, &out->messages));
  for (size_t i = 0; i < messages->size(); ++i) {
    RETURN_IF_API_ERROR(ConvertMessage((*messages)[i], IndexPath("messages", i), &out->messages));
  }
  RETURN_IF_API_ERROR(ReadTools(body, &out->tools));
  auto thinking = body.find("thinking");
  if (thinking != body.end() && thinking->is_object()) {
    std::optional<std::string> type;
    RETURN_IF_API_ERROR(ReadString(*thinking, "type", "thinking", &type));
    if (type) out->chat_template_kwargs["enable_thinking"] = *type != "disabled";
  }
  if (count_only) return std::nullopt;

  std::optional<bool> stream;
  RETURN_IF_API_ERROR(ReadBool(body, "stream", "", &stream));
  out->stream = stream.value_or(false);
  SamplingRequest& s = out->sampling;
  RETURN_IF_API_ERROR(ReadInteger(body, "max_tokens", "", 1, std::numeric_limits<int32_t>::max(), &s.max_tokens));
  RETURN_IF_API_ERROR(ReadNumber(body, "temperature", "", 0, 100, &s.temperature));
  RETURN_IF_API_ERROR(ReadNumber(body, "top_p", "", 0, 1, &s.top_p));
  RETURN_IF_API_ERROR(ReadInteger(body, "top_k", "", -1, std::numeric_limits<int32_t>::max(), &s.top_k));
  RETURN_IF_API_ERROR(ReadStringList(body, "stop_sequences", "", kMaxStopSequences, &s.stop));
  return std::nullopt;
}

}  // namespace llmhost::server
