// Which keywords the compiler enforces, which it refuses, which it ignores.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "grammar/json_schema_compiler.h"

namespace llmhost::grammar {
namespace {

const std::set<std::string>& Annotations() {
  static const std::set<std::string> kSet = {
      "title",           "description",      "examples",    "example",       "default",   "$schema",      "$id",
      "$comment",        "$anchor",          "deprecated",  "readOnly",      "writeOnly", "$defs",        "definitions",
      "contentEncoding", "contentMediaType", "$vocabulary", "discriminator", "xml",       "externalDocs", "strict"};
  return kSet;
}

// Keywords whose meaning no grammar here enforces exactly.
const std::set<std::string>& Refused() {
  static const std::set<std::string> kSet = {"contains",
                                             "minContains",
                                             "maxContains",
                                             "if",
                                             "then",
                                             "else",
                                             "not",
                                             "dependentRequired",
                                             "dependentSchemas",
                                             "dependencies",
                                             "unevaluatedProperties",
                                             "unevaluatedItems",
                                             "$dynamicRef",
                                             "$dynamicAnchor",
                                             "$recursiveRef",
                                             "$recursiveAnchor",
                                             "additionalItems",
                                             "contentSchema"};
  return kSet;
}

bool IsNonNegativeInteger(const Json& v) {
  if (v.is_number_unsigned()) return true;
  if (v.is_number_integer()) return v.get<int64_t>() >= 0;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return d >= 0 && d < 9.2e18 && d == std::floor(d);
}

}  // namespace

Status UnsupportedKeyword(const std::string& keyword, const std::string& path) {
  return Status::InvalidArgument("'" + keyword + "' at " + (path.empty() ? "/" : path) + " is not supported");
}

Status BadSchema(const std::string& path, const std::string& what) {
  return Status::InvalidArgument("schema at " + (path.empty() ? "/" : path) + ": " + what);
}

std::string ChildPath(const std::string& parent, const std::string& token) {
  std::string escaped;
  for (char c : token) {
    if (c == '~')
      escaped += "~0";
    else if (c == '/')
      escaped += "~1";
    else
      escaped += c;
  }
  return parent + "/" + escaped;
}

bool IsAnnotation(const std::string& keyword) { return Annotations().count(keyword) > 0; }

int64_t MaxCount(const Json& schema, const char* keyword) {
  if (!schema.contains(keyword)) return -1;
  return static_cast<int64_t>(
      std::min<uint64_t>(schema[keyword].get<uint64_t>(), std::numeric_limits<int64_t>::max()));
}

Status CheckKeywords(const Json& schema, const std::string& path) {
  static const std::set<std::string> kTypes = {"null", "boolean", "object", "array", "number", "string", "integer"};
  static const std::set<std::string> kCounts = {"minLength", "maxLength",     "minItems",
                                                "maxItems",  "minProperties", "maxProperties"};
  static const std::set<std::string> kBounds = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = *it;
    if (Refused().count(key)) return UnsupportedKeyword(key, path);
    if (key == "uniqueItems") {
      if (!v.is_boolean()) return BadSchema(path, "'uniqueItems' must be a boolean");
      if (v.get<bool>()) {
        auto max = schema.find("maxItems");
        bool at_most_one = max != schema.end() && max->is_number() && max->get<double>() <= 1;
        if (!at_most_one) return UnsupportedKeyword(key, path);
      }
    } else if (key == "multipleOf") {
      // multipleOf 1 on integers says nothing more; anything else is refused.
      bool trivial = v.is_number() && v.get<double>() == 1 && AllowedTypes(schema) == std::set<std::string>{"integer"};
      if (!trivial) return UnsupportedKeyword(key, path);
    } else if (key == "type") {
      if (v.is_string()) {
        if (!kTypes.count(v.get<std::string>())) return BadSchema(path, "unknown type '" + v.get<std::string>() + "'");
      } else if (v.is_array()) {
        for (const auto& t : v)
          if (!t.is_string() || !kTypes.count(t.get<std::string>())) return BadSchema(path, "bad entry in 'type'");
      } else {
        return BadSchema(path, "'type' must be a string or an array");
      }
    } else if (kCounts.count(key)) {
      if (!IsNonNegativeInteger(v)) return BadSchema(path, "'" + key + "' must be a non-negative integer");
    } else if (kBounds.count(key)) {
      if (!v.is_number()) return BadSchema(path, "'" + key + "' must be a number");
    } else if (key == "items" && v.is_array()) {
      return UnsupportedKeyword("items' as an array (use 'prefixItems')", path);
    } else if (key == "required") {
      if (!v.is_array()) return BadSchema(path, "'required' must be an array");
      for (const auto& r : v)
        if (!r.is_string()) return BadSchema(path, "'required' entries must be strings");
    } else if (key == "enum") {
      if (!v.is_array()) return BadSchema(path, "'enum' must be an array");
    } else if ((key == "pattern" || key == "format") && !v.is_string()) {
      return BadSchema(path, "'" + key + "' must be a string");
    } else if ((key == "anyOf" || key == "oneOf" || key == "allOf" || key == "prefixItems") &&
               (!v.is_array() || v.empty())) {
      return BadSchema(path, "'" + key + "' must be a non-empty array");
    } else if ((key == "properties" || key == "patternProperties" || key == "$defs" || key == "definitions") &&
               !v.is_object()) {
      return BadSchema(path, "'" + key + "' must be an object");
    } else if (key == "$ref" && !v.is_string()) {
      return BadSchema(path, "'$ref' must be a string");
    } else if (key == "nullable" && !v.is_boolean()) {
      return BadSchema(path, "'nullable' must be a boolean");
    }
  }
  return Status::OK();
}

std::set<std::string> AllowedTypes(const Json& schema) {
  auto type = schema.find("type");
  if (type == schema.end()) return {"null", "boolean", "object", "array", "number", "string"};
  std::set<std::string> types;
  if (type->is_string()) types.insert(type->get<std::string>());
  if (type->is_array())
    for (const auto& t : *type)
      if (t.is_string()) types.insert(t.get<std::string>());
  auto nullable = schema.find("nullable");
  if (nullable != schema.end() && nullable->is_boolean() && nullable->get<bool>()) types.insert("null");
  if (types.count("number")) types.erase("integer");
  return types;
}

}  // namespace llmhost::grammar
