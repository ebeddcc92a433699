// Named parameters (grammar/json_schema.h): an object schema's properties,
// each value as its tool-call format writes it: JSON text, or bare text
// for strings inside XML-like markup, which must never hold the tag that
// ends the value.
#include <set>

#include "grammar/json_schema.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/json_schema_enum.h"
#include "grammar/regex_compiler.h"

namespace llmhost::grammar {
namespace {

// What a parameters object may say beside annotations: the rest (counts,
// patterns of names, alternatives) speaks of a whole object that these
// formats never write.
bool IsParametersKeyword(const std::string& key) {
  static const std::set<std::string> kSet = {"type", "properties", "required", "additionalProperties", "nullable"};
  return kSet.count(key) > 0;
}

bool HasConstraints(const Json& schema) {
  for (auto it = schema.begin(); it != schema.end(); ++it)
    if (!IsAnnotation(it.key())) return true;
  return false;
}

}  // namespace

Result<NodeId> AddTextAvoiding(Grammar& g, std::string_view stop) {
  if (stop.empty()) return Status::InvalidArgument("text avoiding an empty stop");
  for (char c : stop)
    if (static_cast<unsigned char>(c) >= 0x80) return Status::InvalidArgument("text avoiding a non-ASCII stop");
  if (stop.find(stop[0], 1) != std::string_view::npos)
    return Status::InvalidArgument("text avoiding '" + std::string(stop) + "': its first character occurs again");
  // Text = run of non-first characters, then segments that each start at a
  // `first` and either end inside a proper prefix of stop or turn away from
  // it (with a character that is neither the expected one nor `first`).
  const char32_t first = static_cast<unsigned char>(stop[0]);
  const NodeId run = g.Repeat(g.Codepoints({{first, first}}, /*negate=*/true), 0, -1);
  std::vector<NodeId> after;
  for (size_t j = 1; j < stop.size(); ++j) {
    const char32_t expected = static_cast<unsigned char>(stop[j]);
    const NodeId away = g.Seq({g.Codepoints({{first, first}, {expected, expected}}, /*negate=*/true), run});
    after.push_back(g.Seq({g.Literal(stop.substr(1, j - 1)), g.Optional(away)}));
  }
  const NodeId segment = g.Seq({g.Byte(static_cast<uint8_t>(first)), g.Alt(std::move(after))});
  return g.Seq({run, g.Repeat(segment, 0, -1)});
}

Result<Json> SchemaCompiler::Resolved(const Json& schema, const std::string& path, int depth) {
  if (depth > kMaxSchemaDepth) return BadSchema(path, "nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
  if (!schema.is_object()) return schema;
  RETURN_IF_ERROR(CheckKeywords(schema, path));
  RefResolver resolve = [this](const std::string& r, const std::string& at) { return Resolve(r, at); };
  if (schema.contains("$ref")) {
    ASSIGN_OR_RETURN(const Json* target, Resolve(schema["$ref"].get<std::string>(), path));
    Json siblings = schema;
    siblings.erase("$ref");
    if (!HasConstraints(siblings)) return Resolved(*target, path, depth + 1);
    ASSIGN_OR_RETURN(Json merged, MergeSchemas(*target, siblings, path, resolve));
    return Resolved(merged, path, depth + 1);
  }
  if (schema.contains("allOf")) {
    ASSIGN_OR_RETURN(Json merged, MergeAllOf(schema, path, resolve, depth));
    return Resolved(merged, path, depth + 1);
  }
  return schema;
}

Result<NodeId> SchemaCompiler::ValueOfTypes(const Json& schema, const std::string& path, const Json& types,
                                            int depth) {
  RefResolver resolve = [this](const std::string& r, const std::string& at) { return Resolve(r, at); };
  ASSIGN_OR_RETURN(Json merged, MergeSchemas(schema, types, path, resolve));
  return Value(merged, path, depth);
}

Result<NodeId> SchemaCompiler::BareString(const Json& in, const std::string& path, std::string_view stop, int depth) {
  if (in.is_boolean()) {
    if (!in.get<bool>()) return BadSchema(path, "'false' never matches");
    return AddTextAvoiding(g_, stop);
  }
  if (!in.is_object()) return BadSchema(path, "not an object or a boolean");
  ASSIGN_OR_RETURN(Json schema, Resolved(in, path, depth));
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!schema.contains(key)) continue;
    // The string alternatives; bare text cannot say null or any other type.
    Json siblings = schema;
    siblings.erase(key);
    RefResolver resolve = [this](const std::string& r, const std::string& at) { return Resolve(r, at); };
    std::vector<NodeId> alts;
    for (size_t i = 0; i < schema[key].size(); ++i) {
      const std::string at = ChildPath(ChildPath(path, key), std::to_string(i));
      ASSIGN_OR_RETURN(Json branch, Resolved(schema[key][i], at, depth + 1));
      if (HasConstraints(siblings)) {
        ASSIGN_OR_RETURN(branch, MergeSchemas(siblings, branch, at, resolve));
      }
      if (branch.is_boolean() || !AllowedTypes(branch).count("string")) continue;
      ASSIGN_OR_RETURN(NodeId alt, BareString(branch, at, stop, depth + 1));
      alts.push_back(alt);
    }
    if (alts.empty()) return BadSchema(path, "no alternative of '" + std::string(key) + "' allows a string");
    if (alts.size() > 1 && std::string(key) == "oneOf")
      return UnsupportedKeyword("oneOf' with several string alternatives, for a parameter written as bare text", path);
    return g_.Alt(std::move(alts));
  }
  if (!AllowedTypes(schema).count("string"))
    return BadSchema(path, "the tool-call format writes this parameter as bare text, and its schema allows no string");
  const char32_t first = static_cast<unsigned char>(stop.empty() ? 0 : stop[0]);
  CodepointSet excluded = CodepointSet::Of(first, first);
  if (schema.contains("enum") || schema.contains("const")) {
    ASSIGN_OR_RETURN(std::vector<Json> values, EnumValues(schema, path));
    std::vector<NodeId> alts;
    for (const Json& v : values) {
      if (!v.is_string()) continue;
      const std::string& text = v.get_ref<const std::string&>();
      if (!stop.empty() && text.find(stop) != std::string::npos) continue;
      alts.push_back(g_.Literal(text));
    }
    if (alts.empty()) return BadSchema(path, "no value of 'enum' or 'const' is a string that can be written as bare text");
    return g_.Alt(std::move(alts));
  }
  bool has_min = schema.contains("minLength"), has_max = schema.contains("maxLength");
  if (schema.contains("format")) {
    // Formats are ASCII without '<': none holds a markup tag.
    ASSIGN_OR_RETURN(std::optional<NodeId> content, Format(schema["format"].get<std::string>(), path));
    if (content) {
      if (has_min || has_max || schema.contains("pattern"))
        return UnsupportedKeyword("format' beside 'pattern' or 'minLength/maxLength", path);
      return *content;
    }
  }
  if (schema.contains("pattern")) {
    if (has_min || has_max) return UnsupportedKeyword("pattern' beside 'minLength'/'maxLength", path);
    // Without stop's first character: a subset, never a wrong acceptance.
    Result<NodeId> content = CompileRegex(g_, schema["pattern"].get<std::string>(), /*search=*/true, RegexText::kUtf8,
                                          excluded);
    if (!content.ok()) return BadSchema(ChildPath(path, "pattern"), content.status().message());
    return *content;
  }
  if (has_min || has_max) {
    uint64_t min = has_min ? schema["minLength"].get<uint64_t>() : 0;
    int64_t max = MaxCount(schema, "maxLength");
    return RepeatCount(g_.Codepoints(excluded.ranges(), /*negate=*/true), min, max, path);
  }
  return AddTextAvoiding(g_, stop);
}

Result<std::vector<NamedParameter>> AddNamedParameters(Grammar& g, const Json& schema,
                                                       const NamedParametersOptions& options) {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) return BadSchema("", "'false' never matches");
    return std::vector<NamedParameter>{};
  }
  if (!schema.is_object()) return BadSchema("", "not an object or a boolean");
  RETURN_IF_ERROR(CheckKeywords(schema, ""));
  if (!AllowedTypes(schema).count("object")) return BadSchema("", "the parameters must be an object");
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    if (IsAnnotation(it.key()) || IsParametersKeyword(it.key())) continue;
    return Status::InvalidArgument("'" + it.key() +
                                   "' at / is not supported where each parameter is written on its own "
                                   "(the parameters may have properties, required and additionalProperties)");
  }
  SchemaCompiler compiler(g, schema, options.json);
  const Json properties = schema.value("properties", Json::object());
  const Json additional = schema.value("additionalProperties", Json(options.json.default_additional_properties));
  std::vector<std::string> required;
  for (const Json& r : schema.value("required", Json::array())) required.push_back(r.get<std::string>());
  auto is_required = [&](const std::string& n) { return std::find(required.begin(), required.end(), n) != required.end(); };

  struct Declared {
    std::string name;
    Json schema;
  };
  std::vector<Declared> declared;
  for (auto it = properties.begin(); it != properties.end(); ++it) {
    if (*it == Json(false)) {
      if (is_required(it.key())) return BadSchema("", "required property '" + it.key() + "' is forbidden");
      continue;
    }
    declared.push_back({it.key(), *it});
  }
  for (const std::string& r : required) {
    if (properties.contains(r)) continue;
    if (additional == Json(false))
      return BadSchema("", "required property '" + r + "' is forbidden by 'additionalProperties'");
    declared.push_back({r, additional});
  }

  std::vector<NamedParameter> out;
  for (const Declared& d : declared) {
    const std::string path = ChildPath(ChildPath("", "properties"), d.name);
    const ParameterForm form = options.form ? options.form(d.schema) : ParameterForm{};
    NamedParameter p{d.name, is_required(d.name), -1};
    if (form.bare) {
      ASSIGN_OR_RETURN(p.value, compiler.BareString(d.schema, path, options.stop, 1));
    } else if (!form.json_type.empty()) {
      // Values of other types would be read back as strings.
      Json types = Json::array({form.json_type, "null"});
      if (form.json_type == "number") types.push_back("integer");
      Result<NodeId> value = compiler.ValueOfTypes(d.schema, path, Json{{"type", types}}, 1);
      if (!value.ok())
        return BadSchema(path, "the tool-call format reads this parameter as " + form.json_type + " text: " +
                                   value.status().message());
      p.value = *value;
    } else {
      ASSIGN_OR_RETURN(p.value, compiler.Value(d.schema, path, 1));
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace llmhost::grammar
