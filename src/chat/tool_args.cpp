#include "chat/tool_args.h"

#include <algorithm>
#include <cctype>

#include "chat/json_scan.h"

namespace llmhost {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string SchemaType(const nlohmann::json& prop) {
  if (!prop.is_object() || !prop.contains("type")) return "";
  const auto& t = prop["type"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {  // ["integer", "null"]: the first that is not null
    for (const auto& e : t) {
      if (e.is_string() && e.get<std::string>() != "null") return e.get<std::string>();
    }
  }
  return "";
}

}  // namespace

ToolSchemas::ToolSchemas(const nlohmann::json& tools) {
  if (!tools.is_array()) return;
  for (const auto& tool : tools) {
    if (!tool.is_object()) continue;
    const nlohmann::json* fn = &tool;
    if (tool.contains("function") && tool["function"].is_object()) fn = &tool["function"];
    if (!fn->contains("name") || !(*fn)["name"].is_string()) continue;
    const nlohmann::json* schema = nullptr;
    if (fn->contains("parameters")) schema = &(*fn)["parameters"];
    else if (fn->contains("input_schema")) schema = &(*fn)["input_schema"];
    auto& params = types_[(*fn)["name"].get<std::string>()];
    if (!schema || !schema->is_object() || !schema->contains("properties")) continue;
    const auto& props = (*schema)["properties"];
    if (!props.is_object()) continue;
    for (auto it = props.begin(); it != props.end(); ++it) params[it.key()] = SchemaType(it.value());
  }
}

std::string ToolSchemas::TypeOf(const std::string& tool, const std::string& param) const {
  auto t = types_.find(tool);
  if (t == types_.end()) return "";
  auto p = t->second.find(param);
  return p == t->second.end() ? "" : p->second;
}

std::string TypedArgumentJson(std::string_view raw, const std::string& type) {
  if (IsStringType(type)) return json_scan::QuoteJson(raw);
  std::string_view v = Trim(raw);
  if (v == "null") return "null";
  if (type == "boolean") {
    std::string lower(v);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == "true" || lower == "false") return lower;
    return json_scan::QuoteJson(raw);
  }
  auto j = nlohmann::json::parse(v, nullptr, /*allow_exceptions=*/false);
  bool fits = !j.is_discarded();
  if (fits && type == "integer") fits = j.is_number_integer();
  if (fits && type == "number") fits = j.is_number();
  if (fits && type == "object") fits = j.is_object();
  if (fits && type == "array") fits = j.is_array();
  if (!fits) return json_scan::QuoteJson(raw);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ArgumentsBuilder::KeyPrefix(std::string_view key) const {
  std::string out = text_.empty() ? "{" : text_ + ", ";
  out += json_scan::QuoteJson(key);
  out += ": ";
  return out;
}

std::string ArgumentsBuilder::Partial(std::string_view key, std::string_view value_so_far) const {
  std::string out = KeyPrefix(key);
  out += '"';
  json_scan::AppendJsonEscaped(out, value_so_far);
  return out;
}

void ArgumentsBuilder::Add(std::string_view key, const std::string& json_value) {
  text_ = KeyPrefix(key) + json_value;
}

}  // namespace llmhost
