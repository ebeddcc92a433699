// JSON Schema compiled into a Grammar rule whose strings are exactly the JSON
// texts valid under the schema, in the schema's property order.
//
// A feature that cannot be enforced is an InvalidArgument naming the
// feature and its JSON pointer in the schema ("'uniqueItems' at
// /properties/tags is not supported") — never silently ignored.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "util/status.h"

namespace llmhost::grammar {

struct JsonSchemaOptions {
  // The longest run of whitespace accepted between JSON tokens; -1: any.
  // Bounded by default so that generation cannot wander in whitespace.
  int max_whitespace = 4;
  // additionalProperties when the schema does not say (the standard: true).
  // OpenAI's strict mode sets it false.
  bool default_additional_properties = true;
};

// The rule for one JSON value valid under `schema`. Properties keep the
// order of `schema`'s keys, which only ordered_json keeps (util/json.h's
// ParseOrderedJson): a plain nlohmann::json would sort them by name.
Result<RuleId> AddJsonSchema(Grammar& grammar, const nlohmann::ordered_json& schema,
                             const JsonSchemaOptions& options = {});
// The rule for any JSON object (OpenAI's json_object response format).
RuleId AddAnyJsonObject(Grammar& grammar, const JsonSchemaOptions& options = {});

// Named parameters: tool-call formats that write each argument on its own
// (Qwen3-Coder's <parameter=k>, GLM-4.5's <arg_key>, pythonic k=v) rather
// than as one JSON object. The object schema's properties in its order,
// each with the node for its value as the format writes it.
struct NamedParameter {
  std::string name;
  bool required = false;
  NodeId value = -1;
};

// How the format's reader takes a parameter's text.
struct ParameterForm {
  // Bare text read as a string (no quotes, no escapes): the property must
  // allow strings, and only its string values are generated.
  bool bare = false;
  // JSON text read as this type (and null); "" for any type.
  std::string json_type;
};

struct NamedParametersOptions {
  JsonSchemaOptions json;
  std::function<ParameterForm(const nlohmann::ordered_json& property)> form;  // unset: JSON of any type
  // Text that bare values never hold: the markup that ends them
  // ("</parameter>"). Its first character must not occur again in it.
  std::string stop;
};

// InvalidArgument for a parameters schema the formats cannot carry: one
// constraining the object beyond properties/required/additionalProperties
// (minProperties, patternProperties, anyOf, ...), or a property whose form
// cannot hold its values. Extra properties (additionalProperties not
// false) are not generated: there are no names to give them.
Result<std::vector<NamedParameter>> AddNamedParameters(Grammar& grammar, const nlohmann::ordered_json& schema,
                                                       const NamedParametersOptions& options);

// Any UTF-8 text in which `stop` never occurs. InvalidArgument when `stop`
// is empty or its first character occurs in it again (the construction
// relies on every occurrence starting at a fresh first character).
Result<NodeId> AddTextAvoiding(Grammar& grammar, std::string_view stop);

}  // namespace llmhost::grammar
