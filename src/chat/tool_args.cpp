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

// The schema a local ref ("#/$defs/X", "#/definitions/X") names; null when none.
const nlohmann::json* LocalRef(const nlohmann::json& ref, const nlohmann::json& root) {
  if (!ref.is_string()) return nullptr;
  const std::string& text = ref.get_ref<const std::string&>();
  if (text.size() < 2 || text[0] != '#' || text[1] != '/') return nullptr;
  try {
    const nlohmann::json::json_pointer pointer(text.substr(1));
    return root.contains(pointer) ? &root.at(pointer) : nullptr;
  } catch (const nlohmann::json::exception&) {  // a malformed pointer names nothing
    return nullptr;
  }
}

std::string TypeOfSchema(const nlohmann::json& prop, const nlohmann::json& root, int depth) {
  if (!prop.is_object() || depth > 8) return "";
  if (prop.contains("type")) {
    const auto& t = prop["type"];
    if (t.is_string()) return t.get<std::string>();
    if (t.is_array()) {  // ["integer", "null"]: the first that is not null
      for (const auto& e : t) {
        if (e.is_string() && e.get<std::string>() != "null") return e.get<std::string>();
      }
    }
    return "";
  }
  if (prop.contains("$ref")) {
    const nlohmann::json* target = LocalRef(prop["$ref"], root);
    return target ? TypeOfSchema(*target, root, depth + 1) : "";
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!prop.contains(key) || !prop[key].is_array()) continue;
    std::string found;
    for (const auto& branch : prop[key]) {
      std::string t = TypeOfSchema(branch, root, depth + 1);
      if (t == "null") continue;
      if (t.empty() || (!found.empty() && t != found)) return "";
      found = t;
    }
    return found;
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
    for (auto it = props.begin(); it != props.end(); ++it) params[it.key()] = ParameterType(it.value(), *schema);
  }
}

std::string ParameterType(const nlohmann::json& property, const nlohmann::json& root) {
  return TypeOfSchema(property, root, 0);
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
  if (j.is_discarded() && json_scan::IsValidJson(v)) {
    // Valid JSON that nlohmann cannot hold (a number past the double range)
    // passes as written when its kind is the parameter's.
    const char c = v.front();
    const bool numeric = c == '-' || (c >= '0' && c <= '9');
    const bool kind = type == "object" ? c == '{'
                      : type == "array" ? c == '['
                      : type == "number" ? numeric
                      : type == "integer" ? numeric && v.find_first_of(".eE") == std::string_view::npos
                                          : false;
    return kind ? std::string(v) : json_scan::QuoteJson(raw);
  }
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
