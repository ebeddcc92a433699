#include "server/tool_schema.h"

#include <string_view>

namespace llmhost::server {

namespace {

constexpr std::string_view kTypes[] = {"object", "array", "string", "number", "integer", "boolean", "null"};

bool IsTypeName(const OJson& v) {
  if (!v.is_string()) return false;
  for (std::string_view t : kTypes) {
    if (v.get_ref<const std::string&>() == t) return true;
  }
  return false;
}

ApiError Bad(const std::string& path, const std::string& what) {
  return BadRequest("'" + path + "' " + what, path);
}

MaybeError CheckSchema(const OJson& s, const std::string& path);

MaybeError CheckSchemaList(const OJson& v, const std::string& path) {
  if (!v.is_array() || v.empty()) return Bad(path, "must be a non-empty array of schemas");
  for (size_t i = 0; i < v.size(); ++i) RETURN_IF_API_ERROR(CheckSchema(v[i], IndexPath(path, i)));
  return std::nullopt;
}

MaybeError CheckSchemaMap(const OJson& v, const std::string& path) {
  if (!v.is_object()) return Bad(path, "must be an object of schemas, got " + JsonTypeName(v));
  for (auto it = v.begin(); it != v.end(); ++it) RETURN_IF_API_ERROR(CheckSchema(it.value(), FieldPath(path, it.key())));
  return std::nullopt;
}

// A schema: an object, or true / false (JSON Schema's "anything" / "nothing").
MaybeError CheckSchema(const OJson& s, const std::string& path) {
  if (s.is_boolean()) return std::nullopt;
  if (!s.is_object()) return Bad(path, "must be a JSON Schema object, got " + JsonTypeName(s));
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    const OJson& v = it.value();
    const std::string p = FieldPath(path, k);
    if (k == "type") {
      if (v.is_array()) {
        if (v.empty()) return Bad(p, "must not be an empty list");
        for (size_t i = 0; i < v.size(); ++i) {
          if (!IsTypeName(v[i])) return Bad(IndexPath(p, i), "must be a JSON Schema type name");
        }
      } else if (!IsTypeName(v)) {
        return Bad(p, "must be one of object, array, string, number, integer, boolean, null (or a list of them), got " +
                          (v.is_string() ? "'" + v.get<std::string>() + "'" : JsonTypeName(v)));
      }
    } else if (k == "properties" || k == "patternProperties" || k == "$defs" || k == "definitions") {
      RETURN_IF_API_ERROR(CheckSchemaMap(v, p));
    } else if (k == "items") {
      if (v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i) RETURN_IF_API_ERROR(CheckSchema(v[i], IndexPath(p, i)));
      } else {
        RETURN_IF_API_ERROR(CheckSchema(v, p));
      }
    } else if (k == "additionalProperties" || k == "not" || k == "additionalItems" || k == "contains" ||
               k == "propertyNames" || k == "if" || k == "then" || k == "else") {
      RETURN_IF_API_ERROR(CheckSchema(v, p));
    } else if (k == "anyOf" || k == "oneOf" || k == "allOf" || k == "prefixItems") {
      RETURN_IF_API_ERROR(CheckSchemaList(v, p));
    } else if (k == "required") {
      if (!v.is_array()) return Bad(p, "must be an array of property names, got " + JsonTypeName(v));
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) return Bad(IndexPath(p, i), "must be a property name (a string)");
      }
    } else if (k == "enum") {
      if (!v.is_array()) return Bad(p, "must be an array of values, got " + JsonTypeName(v));
    } else if (k == "description" || k == "title" || k == "pattern" || k == "format" || k == "$ref") {
      if (!v.is_string()) return Bad(p, "must be a string, got " + JsonTypeName(v));
    }
  }
  return std::nullopt;
}

}  // namespace

MaybeError CheckToolSchema(const OJson& schema, const std::string& path) {
  if (!schema.is_object()) {
    return Bad(path, "must be a JSON Schema object (e.g. {\"type\": \"object\", \"properties\": {...}}), got " +
                         JsonTypeName(schema));
  }
  auto type = schema.find("type");
  if (type != schema.end() && !(type->is_string() && type->get_ref<const std::string&>() == "object")) {
    const std::string p = FieldPath(path, "type");
    return Bad(p, "must be \"object\": a tool's arguments are an object, got " +
                      (type->is_string() ? "'" + type->get<std::string>() + "'" : JsonTypeName(*type)));
  }
  return CheckSchema(schema, path);
}

}  // namespace llmhost::server
