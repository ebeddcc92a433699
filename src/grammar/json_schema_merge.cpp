// allOf: the subschemas merged into one schema, keyword by keyword, where
// the conjunction can be written exactly; otherwise an error naming it.
#include <set>

#include "grammar/json_schema_compiler.h"

namespace llmhost::grammar {
namespace {

Json Conjunction(const Json& a, const Json& b) {
  if (a == b) return a;
  return Json{{"allOf", Json::array({a, b})}};
}

// Types allowed by both, as a `type` value.
Result<Json> MergeTypes(const Json& a, const Json& b, const std::string& path) {
  auto widen = [](std::set<std::string> t) {
    if (t.count("number")) t.insert("integer");
    return t;
  };
  std::set<std::string> ta = widen(AllowedTypes(a)), tb = widen(AllowedTypes(b));
  Json out = Json::array();
  for (const std::string& t : ta)
    if (tb.count(t)) out.push_back(t);
  if (out.empty()) return BadSchema(path, "'allOf' of schemas whose types do not meet never matches");
  return out;
}

// The names a schema declares under `properties`.
std::set<std::string> Declared(const Json& s) {
  std::set<std::string> names;
  if (s.contains("properties") && s["properties"].is_object())
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) names.insert(it.key());
  return names;
}

// additionalProperties / patternProperties on one side judge the properties
// the other side declares: merged naively they would not.
Status CheckObjectScopes(const Json& a, const Json& b, const std::string& path) {
  for (int side = 0; side < 2; ++side) {
    const Json& s = side ? b : a;
    const Json& other = side ? a : b;
    bool closed = (s.contains("additionalProperties") && s["additionalProperties"] != Json(true)) ||
                  s.contains("patternProperties");
    if (!closed) continue;
    std::set<std::string> mine = Declared(s);
    for (const std::string& name : Declared(other))
      if (!mine.count(name))
        return UnsupportedKeyword("allOf' with 'additionalProperties' that judges '" + name + "'", path);
    if (other.contains("patternProperties") && other["patternProperties"] != s.value("patternProperties", Json()))
      return UnsupportedKeyword("allOf' with 'patternProperties' on both sides", path);
  }
  return Status::OK();
}

}  // namespace

Result<Json> MergeSchemas(const Json& a_in, const Json& b_in, const std::string& path, const RefResolver& resolve,
                          int depth) {
  if (depth > kMaxSchemaDepth) return BadSchema(path, "'allOf' nested too deep");
  if (a_in.is_boolean()) {
    if (!a_in.get<bool>()) return BadSchema(path, "'false' never matches");
    return b_in;
  }
  if (b_in.is_boolean()) {
    if (!b_in.get<bool>()) return BadSchema(path, "'false' never matches");
    return a_in;
  }
  if (!a_in.is_object() || !b_in.is_object()) return BadSchema(path, "not an object or a boolean");
  // Fold each side's own $ref and allOf first.
  Json a = a_in, b = b_in;
  for (Json* s : {&a, &b}) {
    RETURN_IF_ERROR(CheckKeywords(*s, path));
    if (s->contains("$ref")) {
      ASSIGN_OR_RETURN(const Json* target, resolve((*s)["$ref"].get<std::string>(), path));
      Json rest = *s;
      rest.erase("$ref");
      ASSIGN_OR_RETURN(*s, MergeSchemas(*target, rest, path, resolve, depth + 1));
    }
    if (s->contains("allOf")) {
      ASSIGN_OR_RETURN(*s, MergeAllOf(*s, path, resolve, depth + 1));
    }
  }
  RETURN_IF_ERROR(CheckObjectScopes(a, b, path));
  Json out = a;
  if (a.contains("type") || b.contains("type") || a.contains("nullable") || b.contains("nullable")) {
    ASSIGN_OR_RETURN(Json types, MergeTypes(a, b, path));
    out["type"] = types;
    out.erase("nullable");
  }
  static const std::set<std::string> kLower = {"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum"};
  static const std::set<std::string> kUpper = {"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum"};
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& key = it.key();
    const Json& vb = *it;
    if (key == "type" || key == "nullable" || IsAnnotation(key)) continue;
    if (!a.contains(key)) {
      out[key] = vb;
      continue;
    }
    const Json& va = a[key];
    if (kLower.count(key)) {
      out[key] = va.get<double>() >= vb.get<double>() ? va : vb;
    } else if (kUpper.count(key)) {
      out[key] = va.get<double>() <= vb.get<double>() ? va : vb;
    } else if (key == "required") {
      Json merged = va;
      for (const Json& r : vb)
        if (std::find(merged.begin(), merged.end(), r) == merged.end()) merged.push_back(r);
      out[key] = merged;
    } else if (key == "properties") {
      Json merged = va;
      for (auto p = vb.begin(); p != vb.end(); ++p)
        merged[p.key()] = merged.contains(p.key()) ? Conjunction(merged[p.key()], *p) : *p;
      out[key] = merged;
    } else if (key == "items" || key == "additionalProperties" || key == "propertyNames") {
      out[key] = Conjunction(va, vb);
    } else if (key == "enum") {
      Json both = Json::array();
      for (const Json& v : va)
        if (std::find(vb.begin(), vb.end(), v) != vb.end()) both.push_back(v);
      if (both.empty()) return BadSchema(path, "'allOf' of 'enum's with no common value never matches");
      out[key] = both;
    } else if (va != vb) {
      // const, pattern, format, prefixItems, anyOf, ...: only when equal.
      return UnsupportedKeyword("allOf' merging two different '" + key + "'", path);
    }
  }
  return out;
}

Result<Json> MergeAllOf(const Json& schema, const std::string& path, const RefResolver& resolve, int depth) {
  if (depth > kMaxSchemaDepth) return BadSchema(path, "'allOf' nested too deep");
  Json merged = schema;
  merged.erase("allOf");
  const Json& parts = schema["allOf"];
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string part_path = ChildPath(ChildPath(path, "allOf"), std::to_string(i));
    ASSIGN_OR_RETURN(merged, MergeSchemas(merged, parts[i], part_path, resolve, depth + 1));
  }
  return merged;
}

}  // namespace llmhost::grammar
