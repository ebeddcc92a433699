// object schemas: properties in the schema's order (optional ones may be
// left out), then any extra properties, within min/maxProperties.
//
// Extra keys: with additionalProperties not false, any key but the declared
// (and forbidden) names, built exactly (StringExcept); with
// patternProperties, keys in the pattern's language (extra keys outside it
// are then not generated: a subset); with propertyNames, keys of that
// string schema. Mixes whose key languages would need intersection or
// difference of regexes are refused. Extra keys are not told apart from one
// another, so minProperties counts at most one of them.
#include <map>

#include "grammar/json_schema_compiler.h"

namespace llmhost::grammar {
namespace {

struct Declared {
  std::string name;
  const Json* schema;
  bool required;
};

bool TrivialNames(const Json& names) {
  if (names == Json(true)) return true;
  if (!names.is_object()) return false;
  for (auto it = names.begin(); it != names.end(); ++it) {
    if (IsAnnotation(it.key())) continue;
    if (it.key() == "type" && *it == Json("string")) continue;
    return false;
  }
  return true;
}

}  // namespace

Result<NodeId> SchemaCompiler::Object(const Json& schema, const std::string& path, int depth) {
  static const Json kTrue = true;
  const Json properties = schema.contains("properties") ? schema["properties"] : Json::object();
  const Json additional = schema.contains("additionalProperties") ? schema["additionalProperties"]
                                                                  : Json(options_.default_additional_properties);
  const Json* names = schema.contains("propertyNames") ? &schema["propertyNames"] : nullptr;
  if (names && TrivialNames(*names)) names = nullptr;
  const Json* patterns = schema.contains("patternProperties") && !schema["patternProperties"].empty()
                             ? &schema["patternProperties"]
                             : nullptr;
  std::vector<std::string> required;
  if (schema.contains("required"))
    for (const Json& r : schema["required"])
      if (std::find(required.begin(), required.end(), r.get<std::string>()) == required.end())
        required.push_back(r.get<std::string>());
  auto is_required = [&](const std::string& n) {
    return std::find(required.begin(), required.end(), n) != required.end();
  };

  std::vector<Declared> declared;
  std::vector<std::string> excluded;  // keys extras must avoid
  for (auto it = properties.begin(); it != properties.end(); ++it) {
    excluded.push_back(it.key());
    if (*it == Json(false)) {
      if (is_required(it.key())) return BadSchema(path, "required property '" + it.key() + "' is forbidden");
      continue;
    }
    declared.push_back({it.key(), &*it, is_required(it.key())});
  }
  if ((patterns || names) && !declared.empty())
    return UnsupportedKeyword(std::string(patterns ? "patternProperties" : "propertyNames") + "' beside 'properties",
                              path);
  if (patterns && names) return UnsupportedKeyword("patternProperties' beside 'propertyNames", path);
  // Required names not under properties are judged by additionalProperties.
  for (const std::string& r : required) {
    if (properties.contains(r)) continue;
    if (patterns || names)
      return UnsupportedKeyword("required' of an undeclared property beside 'patternProperties' or 'propertyNames",
                                path);
    if (additional == Json(false))
      return BadSchema(path, "required property '" + r + "' is forbidden by 'additionalProperties'");
    declared.push_back({r, &additional, true});
    excluded.push_back(r);
  }

  // Members: key ws ":" ws value ws.
  NodeId ws = Ws();
  auto member = [&](NodeId key, NodeId value) { return g_.Seq({key, ws, g_.Byte(':'), ws, value, ws}); };
  std::vector<NodeId> members;
  for (const Declared& d : declared) {
    ASSIGN_OR_RETURN(NodeId value, Value(*d.schema, ChildPath(ChildPath(path, "properties"), d.name), depth + 1));
    members.push_back(member(StringLiteral(d.name), value));
  }
  std::optional<NodeId> extra;
  if (patterns) {
    if (patterns->size() > 1) return UnsupportedKeyword("patternProperties' with more than one pattern", path);
    auto it = patterns->begin();
    std::string at = ChildPath(ChildPath(path, "patternProperties"), it.key());
    ASSIGN_OR_RETURN(NodeId key, String(Json{{"pattern", it.key()}}, at));
    ASSIGN_OR_RETURN(NodeId value, Value(*it, at, depth + 1));
    extra = member(key, value);
  } else if (additional != Json(false)) {
    std::string at = ChildPath(path, "additionalProperties");
    NodeId key;
    if (names) {
      if (!excluded.empty()) return UnsupportedKeyword("propertyNames' beside forbidden properties", path);
      // Keys are strings whatever types the schema allows.
      std::string names_path = ChildPath(path, "propertyNames");
      RefResolver resolve = [this](const std::string& r, const std::string& p) { return Resolve(r, p); };
      ASSIGN_OR_RETURN(Json key_schema, MergeSchemas(*names, Json{{"type", "string"}}, names_path, resolve));
      ASSIGN_OR_RETURN(key, Value(key_schema, names_path, depth + 1));
    } else {
      key = excluded.empty() ? AnyString() : StringExcept(excluded);
    }
    ASSIGN_OR_RETURN(NodeId value, Value(additional, at, depth + 1));
    extra = member(key, value);
  }

  uint64_t min = schema.contains("minProperties") ? schema["minProperties"].get<uint64_t>() : 0;
  int64_t max = MaxCount(schema, "maxProperties");
  bool counting = min > 0 || max >= 0;
  size_t n = declared.size();
  if (counting && n > static_cast<size_t>(kMaxCountedProperties))
    return UnsupportedKeyword(
        "minProperties/maxProperties' with more than " + std::to_string(kMaxCountedProperties) + " properties", path);
  // tail[i][c][emitted]: the members from declared[i] on, after c present
  // (counted only under min/maxProperties) and whether any was written.
  size_t counts = counting ? n + 1 : 1;
  using Cell = std::optional<NodeId>;
  std::vector<std::vector<std::array<Cell, 2>>> tail(n + 1, std::vector<std::array<Cell, 2>>(counts));
  NodeId comma = g_.Seq({g_.Byte(','), ws});
  // Extra keys may repeat ({"x":1,"x":2} is one property to a validator),
  // so toward minProperties they count as one at most.
  for (size_t c = 0; c < counts; ++c) {
    for (int emitted = 0; emitted < 2; ++emitted) {
      uint64_t kmin = min > c ? min - c : 0;
      if (kmin > 1) continue;
      int64_t kmax = max < 0 ? -1 : max - static_cast<int64_t>(c);
      if (kmax < -1 || (max >= 0 && kmax < 0)) continue;
      if (!extra) {
        if (kmin == 0) tail[n][c][emitted] = g_.Empty();
        continue;
      }
      if (kmax >= 0 && kmin > static_cast<uint64_t>(kmax)) continue;
      if (emitted) {
        ASSIGN_OR_RETURN(NodeId r, RepeatCount(g_.Seq({comma, *extra}), kmin, kmax, path));
        tail[n][c][emitted] = r;
      } else if (kmax == 0) {
        tail[n][c][emitted] = g_.Empty();
      } else {
        ASSIGN_OR_RETURN(NodeId more,
                         RepeatCount(g_.Seq({comma, *extra}), kmin > 0 ? kmin - 1 : 0, kmax < 0 ? -1 : kmax - 1, path));
        NodeId some = g_.Seq({*extra, more});
        tail[n][c][emitted] = kmin == 0 ? g_.Alt({g_.Empty(), some}) : some;
      }
    }
  }
  for (size_t i = n; i-- > 0;) {
    for (size_t c = 0; c < counts; ++c) {
      for (int emitted = 0; emitted < 2; ++emitted) {
        std::vector<NodeId> alts;
        size_t next_c = counting ? c + 1 : 0;
        if (next_c < counts && tail[i + 1][next_c][1]) {
          NodeId take = emitted ? g_.Seq({comma, members[i], *tail[i + 1][next_c][1]})
                                : g_.Seq({members[i], *tail[i + 1][next_c][1]});
          alts.push_back(take);
        }
        if (!declared[i].required && tail[i + 1][c][emitted]) alts.push_back(*tail[i + 1][c][emitted]);
        if (alts.empty()) continue;
        // A cell is reached by taking and by skipping the members before it:
        // as a rule it is built once (a call, or inlined while small), where
        // the node expanded in place would double the automaton per member.
        RuleId rule = g_.AddRule("members of " + (path.empty() ? "/" : path) + " from " + declared[i].name);
        g_.SetBody(rule, g_.Alt(std::move(alts)));
        tail[i][c][emitted] = g_.Ref(rule);
      }
    }
  }
  if (!tail[0][0][0]) {
    if (extra && min > n) return UnsupportedKeyword("minProperties' that only extra properties can reach", path);
    return BadSchema(path, "no object meets 'required', 'minProperties' and 'maxProperties'");
  }
  return g_.Seq({g_.Byte('{'), ws, *tail[0][0][0], g_.Byte('}')});
}

}  // namespace llmhost::grammar
