// AddJsonSchema: dispatch on a schema's keywords, $ref rules, enum/const and
// anyOf/oneOf. The per-type parts are in json_schema_{strings,numbers,
// objects,arrays,formats}.cpp, allOf in json_schema_merge.cpp.
#include "grammar/json_schema.h"

#include "grammar/json_schema_compiler.h"
#include "grammar/json_schema_enum.h"

namespace llmhost::grammar {
namespace {

// `schema` without annotations and without the keywords in `drop`.
Json Constraints(const Json& schema, std::initializer_list<const char*> drop) {
  Json out = Json::object();
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    if (IsAnnotation(it.key())) continue;
    bool dropped = false;
    for (const char* d : drop) dropped = dropped || it.key() == d;
    if (!dropped) out[it.key()] = *it;
  }
  return out;
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() + 0 && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

SchemaCompiler::SchemaCompiler(Grammar& g, const Json& root, const JsonSchemaOptions& options)
    : g_(g), root_(root), options_(options), first_node_(g.node_count()) {}

Result<const Json*> SchemaCompiler::Resolve(const std::string& ref, const std::string& path) const {
  if (ref.empty() || ref[0] != '#') return UnsupportedKeyword("$ref' to '" + ref + "' (only '#...' refs are", path);
  if (ref.size() > 1 && ref[1] != '/') return UnsupportedKeyword("$ref' to the anchor '" + ref, path);
  const Json* at = &root_;
  std::string pointer = PercentDecode(ref.substr(1));
  size_t pos = 1;
  while (pos <= pointer.size() && pointer.size() > 0) {
    size_t next = pointer.find('/', pos);
    if (next == std::string::npos) next = pointer.size();
    std::string token;
    for (size_t i = pos; i < next; ++i) {
      if (pointer[i] == '~' && i + 1 < next && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        token += pointer[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        token += pointer[i];
      }
    }
    if (at->is_object() && at->contains(token)) {
      at = &(*at)[token];
    } else if (at->is_array() && !token.empty() && token.find_first_not_of("0123456789") == std::string::npos &&
               token.size() < 9 && std::stoul(token) < at->size()) {
      at = &(*at)[std::stoul(token)];
    } else {
      return BadSchema(path, "'$ref' target '" + ref + "' not found");
    }
    pos = next + 1;
  }
  return at;
}

Result<NodeId> SchemaCompiler::Ref(const std::string& ref, const std::string& path, int depth) {
  auto known = ref_rules_.find(ref);
  if (known != ref_rules_.end()) {
    auto entered = refs_entered_.find(ref);
    if (entered != refs_entered_.end() && entered->second == guard_)
      return BadSchema(path, "'$ref' '" + ref + "' refers to itself without any JSON text in between");
    return g_.Ref(known->second);
  }
  ASSIGN_OR_RETURN(const Json* target, Resolve(ref, path));
  RuleId rule = g_.AddRule("$ref " + ref);
  ref_rules_[ref] = rule;
  refs_entered_[ref] = guard_;
  Result<NodeId> body = Value(*target, ref.substr(1), depth + 1);
  refs_entered_.erase(ref);
  if (!body.ok()) return body.status();
  g_.SetBody(rule, *body);
  return g_.Ref(rule);
}

Result<NodeId> SchemaCompiler::Value(const Json& schema, const std::string& path, int depth) {
  if (depth > kMaxSchemaDepth)
    return BadSchema(path, "nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
  if (g_.node_count() - first_node_ > kMaxSchemaNodes)
    return BadSchema(path, "the grammar grows past " + std::to_string(kMaxSchemaNodes) + " nodes");
  return ValueChecked(schema, path, depth);
}

Result<NodeId> SchemaCompiler::ValueChecked(const Json& schema, const std::string& path, int depth) {
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return AnyValue();
    return BadSchema(path, "'false' never matches");
  }
  if (!schema.is_object()) return BadSchema(path, "not an object or a boolean");
  RETURN_IF_ERROR(CheckKeywords(schema, path));
  if (schema.contains("$ref")) {
    const std::string& ref = schema["$ref"].get_ref<const std::string&>();
    Json siblings = Constraints(schema, {"$ref"});
    if (siblings.empty()) return Ref(ref, path, depth);
    ASSIGN_OR_RETURN(const Json* target, Resolve(ref, path));
    RefResolver resolve = [this](const std::string& r, const std::string& at) { return Resolve(r, at); };
    ASSIGN_OR_RETURN(Json merged, MergeSchemas(*target, siblings, path, resolve));
    return Value(merged, path, depth + 1);
  }
  if (schema.contains("allOf")) {
    RefResolver resolve = [this](const std::string& ref, const std::string& at) { return Resolve(ref, at); };
    ASSIGN_OR_RETURN(Json merged, MergeAllOf(schema, path, resolve, depth));
    return Value(merged, path, depth + 1);
  }
  if (schema.contains("anyOf") || schema.contains("oneOf")) return Alternatives(schema, path, depth);
  if (schema.contains("enum") || schema.contains("const")) return Enum(schema, path);
  std::vector<NodeId> alts;
  for (const std::string& type : AllowedTypes(schema)) {
    ASSIGN_OR_RETURN(NodeId node, OfType(type, schema, path, depth));
    alts.push_back(node);
  }
  if (alts.empty()) return BadSchema(path, "'type' allows nothing");
  return g_.Alt(std::move(alts));
}

Result<NodeId> SchemaCompiler::OfType(const std::string& type, const Json& schema, const std::string& path, int depth) {
  if (type == "null") return g_.Literal("null");
  if (type == "boolean") return g_.Alt({g_.Literal("true"), g_.Literal("false")});
  if (type == "string") return String(schema, path);
  if (type == "number" || type == "integer") return Number(schema, path, type == "integer");
  ++guard_;
  Result<NodeId> node = type == "object" ? Object(schema, path, depth) : Array(schema, path, depth);
  --guard_;
  return node;
}

Result<NodeId> SchemaCompiler::Alternatives(const Json& schema, const std::string& path, int depth) {
  if (schema.contains("anyOf") && schema.contains("oneOf")) return UnsupportedKeyword("oneOf' beside 'anyOf", path);
  const char* key = schema.contains("anyOf") ? "anyOf" : "oneOf";
  Json siblings = Constraints(schema, {key});
  std::vector<Json> branches;
  for (size_t i = 0; i < schema[key].size(); ++i) {
    const Json& alt = schema[key][i];
    std::string alt_path = ChildPath(ChildPath(path, key), std::to_string(i));
    if (siblings.empty()) {
      branches.push_back(alt);
      continue;
    }
    const Json* target = &alt;
    for (int hops = 0; target->is_object() && target->contains("$ref"); ++hops) {
      if (hops > kMaxSchemaDepth) return BadSchema(alt_path, "'$ref' chain too long");
      if (!(*target)["$ref"].is_string()) return BadSchema(alt_path, "'$ref' must be a string");
      ASSIGN_OR_RETURN(target, Resolve((*target)["$ref"].get<std::string>(), alt_path));
    }
    RefResolver resolve = [this](const std::string& r, const std::string& at) { return Resolve(r, at); };
    ASSIGN_OR_RETURN(Json merged, MergeSchemas(siblings, *target, alt_path, resolve));
    branches.push_back(std::move(merged));
  }
  if (std::string(key) == "oneOf") {
    RefResolver resolve = [this](const std::string& ref, const std::string& at) { return Resolve(ref, at); };
    for (size_t i = 0; i < branches.size(); ++i) {
      for (size_t j = i + 1; j < branches.size(); ++j) {
        ASSIGN_OR_RETURN(bool disjoint, SchemasDisjoint(branches[i], branches[j], resolve, path, depth));
        if (!disjoint)
          return UnsupportedKeyword(
              "oneOf' whose alternatives " + std::to_string(i) + " and " + std::to_string(j) + " may overlap", path);
      }
    }
  }
  std::vector<NodeId> alts;
  for (size_t i = 0; i < branches.size(); ++i) {
    Result<NodeId> node = Value(branches[i], ChildPath(ChildPath(path, key), std::to_string(i)), depth + 1);
    // An alternative that can never match (false) is just left out.
    if (!node.ok() && branches[i].is_boolean()) continue;
    if (!node.ok()) return node.status();
    alts.push_back(*node);
  }
  if (alts.empty()) return BadSchema(path, "no alternative of '" + std::string(key) + "' can match");
  return g_.Alt(std::move(alts));
}

Result<NodeId> SchemaCompiler::Enum(const Json& schema, const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<Json> values, EnumValues(schema, path));
  std::vector<NodeId> alts;
  for (const Json& v : values) alts.push_back(ValueLiteral(v));
  return g_.Alt(std::move(alts));
}

Result<RuleId> AddJsonSchema(Grammar& grammar, const Json& schema, const JsonSchemaOptions& options) {
  SchemaCompiler compiler(grammar, schema, options);
  ASSIGN_OR_RETURN(NodeId body, compiler.Value(schema, "", 0));
  RuleId rule = grammar.AddRule("json_schema");
  grammar.SetBody(rule, body);
  return rule;
}

RuleId AddAnyJsonObject(Grammar& grammar, const JsonSchemaOptions& options) {
  static const Json kEmpty = Json::object();
  SchemaCompiler compiler(grammar, kEmpty, options);
  RuleId rule = grammar.AddRule("json_object");
  grammar.SetBody(rule, compiler.AnyObject());
  return rule;
}

}  // namespace llmhost::grammar
