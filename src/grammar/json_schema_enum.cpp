#include "grammar/json_schema_enum.h"

#include <cmath>

#include "util/utf8.h"

namespace llmhost::grammar {
namespace {

bool IsIntegral(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

// The JSON Schema type names `v` has ("integer" numbers are "number"s too).
std::set<std::string> TypesOf(const Json& v) {
  if (v.is_null()) return {"null"};
  if (v.is_boolean()) return {"boolean"};
  if (v.is_string()) return {"string"};
  if (v.is_array()) return {"array"};
  if (v.is_object()) return {"object"};
  if (IsIntegral(v)) return {"number", "integer"};
  return {"number"};
}

bool TypeAllowed(const std::set<std::string>& allowed, const Json& v) {
  for (const std::string& t : TypesOf(v))
    if (allowed.count(t)) return true;
  return false;
}

Result<bool> ValueAllowed(const Json& schema, const Json& v, const std::string& path) {
  if (!TypeAllowed(AllowedTypes(schema), v)) return false;
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& key = it.key();
    if (IsAnnotation(key) || key == "type" || key == "nullable" || key == "enum" || key == "const") continue;
    if (v.is_string()) {
      size_t length = utf8::CodePointCount(v.get_ref<const std::string&>());
      if (key == "minLength" && length < it->get<double>()) return false;
      if (key == "maxLength" && length > it->get<double>()) return false;
      if (key == "pattern" || key == "format") return UnsupportedKeyword("enum' beside '" + key, path);
    } else if (v.is_number()) {
      double x = v.get<double>(), bound = it->is_number() ? it->get<double>() : 0;
      if (key == "minimum" && !(x >= bound)) return false;
      if (key == "maximum" && !(x <= bound)) return false;
      if (key == "exclusiveMinimum" && !(x > bound)) return false;
      if (key == "exclusiveMaximum" && !(x < bound)) return false;
    } else if (v.is_array() || v.is_object()) {
      static const std::set<std::string> kContainerKeywords = {
          "items",        "prefixItems",          "minItems",          "maxItems",      "properties",
          "required",     "additionalProperties", "patternProperties", "propertyNames", "minProperties",
          "maxProperties"};
      if (kContainerKeywords.count(key)) return UnsupportedKeyword("enum' beside '" + key, path);
    }
  }
  return true;
}

// The schema a $ref-only schema stands for (a chain of them followed).
Result<const Json*> Follow(const Json& s, const RefResolver& resolve, const std::string& path) {
  const Json* at = &s;
  for (int hops = 0; at->is_object() && at->contains("$ref"); ++hops) {
    if (hops > kMaxSchemaDepth) return BadSchema(path, "'$ref' chain too long");
    const Json& ref = (*at)["$ref"];
    if (!ref.is_string()) return BadSchema(path, "'$ref' must be a string");
    ASSIGN_OR_RETURN(at, resolve(ref.get<std::string>(), path));
  }
  return at;
}

// The values a schema is limited to by enum/const, if it is.
std::optional<std::vector<Json>> ListedValues(const Json& s) {
  if (!s.is_object()) return std::nullopt;
  if (s.contains("const")) return std::vector<Json>{s["const"]};
  if (s.contains("enum") && s["enum"].is_array()) return std::vector<Json>(s["enum"].begin(), s["enum"].end());
  return std::nullopt;
}

// The types a schema's values may have (from `type`, or from its listed values).
std::set<std::string> PossibleTypes(const Json& s) {
  if (s.is_boolean()) return s.get<bool>() ? AllowedTypes(Json::object()) : std::set<std::string>{};
  if (auto values = ListedValues(s)) {
    std::set<std::string> out;
    for (const Json& v : *values)
      for (const std::string& t : TypesOf(v)) out.insert(t);
    return out;
  }
  std::set<std::string> types = AllowedTypes(s);
  if (types.count("number")) types.insert("integer");
  return types;
}

}  // namespace

Result<std::vector<Json>> EnumValues(const Json& schema, const std::string& path) {
  std::vector<Json> candidates;
  if (schema.contains("enum")) candidates.assign(schema["enum"].begin(), schema["enum"].end());
  if (schema.contains("const")) {
    const Json& c = schema["const"];
    bool listed = !schema.contains("enum");
    for (const Json& v : candidates) listed = listed || v == c;
    candidates.clear();
    if (listed) candidates.push_back(c);
  }
  std::vector<Json> out;
  for (const Json& v : candidates) {
    ASSIGN_OR_RETURN(bool ok, ValueAllowed(schema, v, path));
    if (ok) out.push_back(v);
  }
  if (out.empty()) return BadSchema(path, "no 'enum'/'const' value is valid under the schema");
  return out;
}

Result<bool> SchemasDisjoint(const Json& a_in, const Json& b_in, const RefResolver& resolve, const std::string& path,
                             int depth) {
  if (depth > kMaxSchemaDepth) return false;  // undecided: treated as overlapping
  ASSIGN_OR_RETURN(const Json* a, Follow(a_in, resolve, path));
  ASSIGN_OR_RETURN(const Json* b, Follow(b_in, resolve, path));
  std::set<std::string> ta = PossibleTypes(*a), tb = PossibleTypes(*b);
  bool shared_type = false;
  for (const std::string& t : ta) shared_type = shared_type || tb.count(t) > 0;
  if (!shared_type) return true;
  auto va = ListedValues(*a), vb = ListedValues(*b);
  if (va && vb) {
    for (const Json& x : *va)
      for (const Json& y : *vb)
        if (x == y) return false;
    return true;
  }
  // Objects told apart by a required property with distinct listed values
  // (a discriminator such as {"kind": {"const": "circle"}}).
  if (!a->is_object() || !b->is_object() || ta != std::set<std::string>{"object"} || tb != ta) return false;
  if (!a->contains("properties") || !b->contains("properties") || !a->contains("required") ||
      !b->contains("required") || !(*a)["required"].is_array() || !(*b)["required"].is_array())
    return false;
  for (const Json& name : (*a)["required"]) {
    bool in_b = false;
    for (const Json& other : (*b)["required"]) in_b = in_b || other == name;
    if (!name.is_string()) continue;
    const std::string& key = name.get_ref<const std::string&>();
    if (!in_b || !(*a)["properties"].contains(key) || !(*b)["properties"].contains(key)) continue;
    ASSIGN_OR_RETURN(const Json* pa, Follow((*a)["properties"][key], resolve, path));
    ASSIGN_OR_RETURN(const Json* pb, Follow((*b)["properties"][key], resolve, path));
    ASSIGN_OR_RETURN(bool disjoint, SchemasDisjoint(*pa, *pb, resolve, path, depth + 1));
    if (disjoint) return true;
  }
  return false;
}

}  // namespace llmhost::grammar
