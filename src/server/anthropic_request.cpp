#include "server/anthropic_request.h"

#include <limits>
#include <string_view>

#include "server/structured_output_request.h"
#include "server/tool_schema.h"

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

// Blocks that carry nothing a local text model can use: redacted thinking
// (encrypted) and what Anthropic's own server tools returned.
bool SkippedBlockType(const std::string& type) {
  static constexpr std::string_view kSkipped[] = {
      "redacted_thinking",     "server_tool_use",         "web_search_tool_result",
      "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
      "text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result",
      "container_upload",      "search_result"};
  for (std::string_view s : kSkipped) {
    if (type == s) return true;
  }
  return false;
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
  const size_t before = out->size();
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
    } else if (*type == "tool_use" || *type == "tool_result") {
      return BadRequest("'" + bp + "': a " + *type + " block belongs in " +
                            (*type == "tool_use" ? "an assistant" : "a user") + " message",
                        bp + ".type");
    } else if (!SkippedBlockType(*type)) {
      return BadRequest("'" + bp + ".type': content blocks of type '" + *type +
                            "' are not supported (text, tool_use, tool_result, thinking, redacted_thinking are)",
                        bp + ".type");
    }
  }
  if (!assistant && !have_text && out->size() == before) have_text = true;  // an empty turn stays a turn
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
    std::optional<bool> strict;
    RETURN_IF_API_ERROR(ReadBool(t, "strict", tp, &strict));
    OJson fn = OJson::object();
    fn["name"] = *name;
    if (description) fn["description"] = *description;
    if (strict) fn["strict"] = *strict;  // a forced call's input then holds only declared properties
    auto schema = t.find("input_schema");
    if (schema == t.end() || schema->is_null()) {
      return BadRequest("'" + tp + ".input_schema' is required: the JSON Schema of the tool's input",
                        tp + ".input_schema");
    }
    RETURN_IF_API_ERROR(CheckToolSchema(*schema, tp + ".input_schema"));
    fn["parameters"] = *schema;
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  if (!out.empty()) *tools = std::move(out);
  return std::nullopt;
}

// tool_choice: {"type": "auto" | "any" | "tool" (with "name") | "none",
// "disable_parallel_tool_use": bool}.
MaybeError ReadToolChoice(const OJson& body, InferenceRequest* out) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return BadRequest("'tool_choice' must be an object such as {\"type\": \"auto\"}", "tool_choice");
  std::optional<std::string> type, name;
  std::optional<bool> no_parallel;
  RETURN_IF_API_ERROR(ReadString(*it, "type", "tool_choice", &type));
  RETURN_IF_API_ERROR(ReadBool(*it, "disable_parallel_tool_use", "tool_choice", &no_parallel));
  ToolChoice& c = out->tool_choice;
  c.parallel = !no_parallel.value_or(false);
  const std::string t = type.value_or("");
  if (t == "auto") {
    c.mode = ToolChoice::kAuto;
  } else if (t == "none") {
    c.mode = ToolChoice::kNone;
  } else if (t == "any") {
    c.mode = ToolChoice::kRequired;
  } else if (t == "tool") {
    c.mode = ToolChoice::kRequired;
    RETURN_IF_API_ERROR(ReadString(*it, "name", "tool_choice", &name));
    if (!name || name->empty()) return BadRequest("'tool_choice.name' is required with type \"tool\"", "tool_choice.name");
    bool found = false;
    if (out->tools.is_array()) {
      for (const OJson& tool : out->tools) found |= tool["function"]["name"] == *name;
    }
    if (!found) return BadRequest("'tool_choice.name': '" + *name + "' is not one of the request's tools", "tool_choice.name");
    c.names.push_back(*name);
  } else {
    return BadRequest("'tool_choice.type' must be auto, any, tool or none" + (type ? "; got '" + t + "'" : std::string()),
                      "tool_choice.type");
  }
  if (c.mode == ToolChoice::kRequired && !out->tools.is_array()) {
    return BadRequest("'tool_choice' requires tools, but the request has none", "tool_choice");
  }
  return std::nullopt;
}

bool HasBeta(std::string_view header, std::string_view name) {
  size_t pos = 0;
  while (pos <= header.size()) {
    size_t end = header.find(',', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view item = header.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == name) return true;
    pos = end + 1;
  }
  return false;
}

// output_config.effort ("low" | "medium" | "high" | "max", Claude Code sends
// it beside adaptive thinking) as a think-block budget (kEffortBudgets); no
// effort is Anthropic's default, high.
MaybeError ReadEffortBudget(const OJson& body, std::optional<int64_t>* budget) {
  *budget = kEffortBudgets[2].tokens;
  auto config = body.find("output_config");
  if (config == body.end() || config->is_null()) return std::nullopt;
  if (!config->is_object()) return BadRequest("'output_config' must be an object such as {\"effort\": \"high\"}", "output_config");
  std::optional<std::string> effort;
  RETURN_IF_API_ERROR(ReadString(*config, "effort", "output_config", &effort));
  if (!effort) return std::nullopt;
  for (const EffortBudget& e : kEffortBudgets) {
    if (*effort == e.effort) {
      *budget = e.tokens > 0 ? std::optional<int64_t>(e.tokens) : std::nullopt;
      return std::nullopt;
    }
  }
  return BadRequest("'output_config.effort' must be low, medium, high, xhigh or max; got '" + *effort + "'",
                    "output_config.effort");
}

// thinking: {"type": "enabled", "budget_tokens": N >= 1024} | {"type":
// "disabled"} | {"type": "adaptive"}. The budget must stay below max_tokens
// unless interleaved thinking is on (the budget then spans the whole turn).
MaybeError ReadThinking(const OJson& body, bool count_only, std::string_view beta, InferenceRequest* out) {
  auto thinking = body.find("thinking");
  if (thinking == body.end() || thinking->is_null()) return std::nullopt;
  if (!thinking->is_object()) {
    return BadRequest("'thinking' must be an object such as {\"type\": \"enabled\", \"budget_tokens\": 2048}",
                      "thinking");
  }
  std::optional<std::string> type;
  RETURN_IF_API_ERROR(ReadString(*thinking, "type", "thinking", &type));
  if (!type) return BadRequest("'thinking.type' is required: enabled, disabled or adaptive", "thinking.type");
  if (*type != "enabled" && *type != "disabled" && *type != "adaptive") {
    return BadRequest("'thinking.type' must be enabled, disabled or adaptive; got '" + *type + "'", "thinking.type");
  }
  out->chat_template_kwargs["enable_thinking"] = *type != "disabled";
  if (*type == "adaptive") {
    // The model decides how long to think, within the effort's budget.
    std::optional<int64_t> budget;
    RETURN_IF_API_ERROR(ReadEffortBudget(body, &budget));
    out->reasoning_budget = budget;
    return std::nullopt;
  }
  if (*type != "enabled") return std::nullopt;
  std::optional<int64_t> budget;
  RETURN_IF_API_ERROR(
      ReadInteger(*thinking, "budget_tokens", "thinking", 0, std::numeric_limits<int32_t>::max(), &budget));
  if (!budget) return BadRequest("'thinking.budget_tokens' is required when thinking is enabled", "thinking.budget_tokens");
  if (*budget < kMinThinkingBudget) {
    return BadRequest("'thinking.budget_tokens' must be at least " + std::to_string(kMinThinkingBudget) + ", got " +
                          std::to_string(*budget),
                      "thinking.budget_tokens");
  }
  out->reasoning_budget = budget;
  const std::optional<int64_t>& max_tokens = out->sampling.max_tokens;
  if (!count_only && max_tokens && *budget >= *max_tokens && !HasBeta(beta, "interleaved-thinking-2025-05-14")) {
    return BadRequest("'thinking.budget_tokens' (" + std::to_string(*budget) + ") must be less than 'max_tokens' (" +
                          std::to_string(*max_tokens) +
                          "), unless the anthropic-beta header includes interleaved-thinking-2025-05-14",
                      "thinking.budget_tokens");
  }
  return std::nullopt;
}

}  // namespace

MaybeError ParseMessagesRequest(const OJson& body, bool count_only, InferenceRequest* out,
                                std::string_view anthropic_beta) {
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
  RETURN_IF_API_ERROR(ReadToolChoice(body, out));
  ApplyToolChoice(out);
  RETURN_IF_API_ERROR(ReadAnthropicOutputFormat(body, &out->constraint));
  SamplingRequest& s = out->sampling;
  if (!count_only) {
    RETURN_IF_API_ERROR(ReadInteger(body, "max_tokens", "", 1, std::numeric_limits<int32_t>::max(), &s.max_tokens));
    if (!s.max_tokens) {
      return BadRequest("max_tokens: Field required (the most tokens to generate, e.g. 1024)", "max_tokens");
    }
  }
  RETURN_IF_API_ERROR(ReadThinking(body, count_only, anthropic_beta, out));
  if (count_only) return std::nullopt;

  std::optional<bool> stream;
  RETURN_IF_API_ERROR(ReadBool(body, "stream", "", &stream));
  out->stream = stream.value_or(false);
  RETURN_IF_API_ERROR(ReadNumber(body, "temperature", "", 0, 100, &s.temperature));
  RETURN_IF_API_ERROR(ReadNumber(body, "top_p", "", 0, 1, &s.top_p));
  RETURN_IF_API_ERROR(ReadInteger(body, "top_k", "", -1, std::numeric_limits<int32_t>::max(), &s.top_k));
  RETURN_IF_API_ERROR(ReadStringList(body, "stop_sequences", "", kMaxStopSequences, &s.stop));
  return std::nullopt;
}

}  // namespace llmhost::server
