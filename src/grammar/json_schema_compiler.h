// The JSON Schema compiler behind AddJsonSchema. One instance compiles one
// schema; its parts live in json_schema_*.cpp (one job each): the dispatch
// and $ref rules here and in json_schema.cpp, JSON text pieces, strings,
// numbers, formats, objects, arrays, allOf merging.
//
// Every JSON text the result accepts is valid under the schema (never a
// wrong acceptance); where the schema allows several spellings of one value
// the grammar may accept a subset (properties in the schema's order, extra
// properties after the declared ones, numbers without an exponent where
// bounds apply, strings escaped only where JSON requires).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "util/status.h"

namespace llmhost::grammar {

using Json = nlohmann::ordered_json;

inline constexpr int kMaxSchemaDepth = 64;          // nested subschemas (and inlined $refs)
inline constexpr size_t kMaxSchemaNodes = 1 << 19;  // grammar nodes one schema may add
inline constexpr int kMaxCountedProperties = 64;    // declared properties under min/maxProperties

// "'uniqueItems' at /properties/tags is not supported"
Status UnsupportedKeyword(const std::string& keyword, const std::string& path);
// "schema at /properties/x: <what>"
Status BadSchema(const std::string& path, const std::string& what);
// The JSON pointer of `parent` extended by one reference token.
std::string ChildPath(const std::string& parent, const std::string& token);

// InvalidArgument for a keyword that cannot be enforced (naming it and the
// path) or a malformed keyword value. Unknown keywords and annotations
// (title, description, examples, default, ...) are ignored, as validators do.
Status CheckKeywords(const Json& schema, const std::string& path);
// The value of a maximum count keyword (maxLength, maxItems, maxProperties),
// clamped to INT64_MAX (past any count enforced); -1 where `schema` has none.
int64_t MaxCount(const Json& schema, const char* keyword);
// Keywords that constrain nothing (annotations, $defs): dropped before merging.
bool IsAnnotation(const std::string& keyword);
// The set of JSON types a schema's `type` (and OpenAPI `nullable`) allows:
// "null", "boolean", "object", "array", "number", "string", "integer".
std::set<std::string> AllowedTypes(const Json& schema);
// `schema` with `allOf` folded in where the keywords can be merged exactly
// ($refs inside are resolved with `resolve`).
using RefResolver = std::function<Result<const Json*>(const std::string& ref, const std::string& path)>;
Result<Json> MergeAllOf(const Json& schema, const std::string& path, const RefResolver& resolve, int depth);
// The two schemas' conjunction as one schema, or an error where it cannot be
// written exactly.
Result<Json> MergeSchemas(const Json& a, const Json& b, const std::string& path, const RefResolver& resolve,
                          int depth = 0);

class SchemaCompiler {
 public:
  SchemaCompiler(Grammar& g, const Json& root, const JsonSchemaOptions& options);

  // The JSON values valid under `schema`, found at `path` in the root.
  Result<NodeId> Value(const Json& schema, const std::string& path, int depth);

  // Pieces of JSON text (json_schema_text.cpp).
  NodeId Ws();
  NodeId AnyValue();  // a rule: values nest
  NodeId AnyString();
  NodeId AnyStringChar();  // one character of a string's JSON text
  NodeId AnyNumber();
  NodeId AnyInteger();
  NodeId AnyObject();
  NodeId StringLiteral(std::string_view value);  // the JSON text of one string value
  NodeId ValueLiteral(const Json& value);        // the JSON text of one value
  // "Any string except these": the JSON texts of strings not in `names`.
  NodeId StringExcept(const std::vector<std::string>& names);
  // `child` between min and max times (max -1: unbounded); counts past
  // kMaxRepeat are an error naming `path`.
  Result<NodeId> RepeatCount(NodeId child, uint64_t min, int64_t max, const std::string& path);

  // A string schema's values as bare text that never holds `stop` (named
  // parameters; json_schema_parameters.cpp).
  Result<NodeId> BareString(const Json& schema, const std::string& path, std::string_view stop, int depth);
  // The values of `schema` of the types `types` ({"type": [...]}) allows.
  Result<NodeId> ValueOfTypes(const Json& schema, const std::string& path, const Json& types, int depth);
  // `schema` with its own $ref (and siblings) resolved.
  Result<Json> Resolved(const Json& schema, const std::string& path, int depth);

  Grammar& g() { return g_; }

 private:
  Result<NodeId> ValueChecked(const Json& schema, const std::string& path, int depth);
  Result<NodeId> Ref(const std::string& ref, const std::string& path, int depth);
  Result<const Json*> Resolve(const std::string& ref, const std::string& path) const;
  Result<NodeId> Alternatives(const Json& schema, const std::string& path, int depth);
  Result<NodeId> Enum(const Json& schema, const std::string& path);
  Result<NodeId> OfType(const std::string& type, const Json& schema, const std::string& path, int depth);

  Result<NodeId> String(const Json& schema, const std::string& path);  // json_schema_strings.cpp
  // The content of a string in a known format; nullopt for unknown names.
  Result<std::optional<NodeId>> Format(const std::string& format, const std::string& path);  // json_schema_formats.cpp
  Result<NodeId> Number(const Json& schema, const std::string& path, bool integer);          // json_schema_numbers.cpp
  Result<NodeId> Object(const Json& schema, const std::string& path, int depth);             // json_schema_objects.cpp
  Result<NodeId> Array(const Json& schema, const std::string& path, int depth);              // json_schema_arrays.cpp

  Grammar& g_;
  const Json& root_;
  JsonSchemaOptions options_;
  size_t first_node_;
  std::map<std::string, RuleId> ref_rules_;     // by resolved pointer
  std::map<std::string, size_t> refs_entered_;  // refs being compiled -> guard_ at entry
  size_t guard_ = 0;                            // '{' and '[' passed on the way down
  std::optional<NodeId> ws_, any_string_, any_string_char_, any_number_, any_integer_;
  std::optional<RuleId> any_value_;
};

}  // namespace llmhost::grammar
