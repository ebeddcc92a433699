// JSON Schema compiled into a Grammar rule whose strings are exactly the JSON
// texts valid under the schema, in the schema's property order.
//
// A feature that cannot be enforced is an InvalidArgument naming the
// feature and its JSON pointer in the schema ("'uniqueItems' at
// /properties/tags is not supported") — never silently ignored.
#pragma once

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

}  // namespace llmhost::grammar
