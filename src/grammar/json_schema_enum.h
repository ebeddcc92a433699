// enum / const values filtered by their sibling keywords, and the test that
// lets oneOf compile as anyOf (alternatives that no value satisfies twice).
#pragma once

#include <string>
#include <vector>

#include "grammar/json_schema_compiler.h"

namespace llmhost::grammar {

// The values of `enum` (and/or `const`) that the rest of `schema` allows, in
// order; an error where a sibling keyword cannot be checked on a value, or
// when none is left.
Result<std::vector<Json>> EnumValues(const Json& schema, const std::string& path);

// True when no JSON value can be valid under both schemas, as far as their
// types, enum/const values and required const-valued properties show.
Result<bool> SchemasDisjoint(const Json& a, const Json& b, const RefResolver& resolve, const std::string& path,
                             int depth);

}  // namespace llmhost::grammar
