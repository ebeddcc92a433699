// The shape checks a tool's JSON Schema gets before a template prints it:
// OpenAI `tools[i].function.parameters` and Anthropic `tools[i].input_schema`
// must be a schema object whose "type" (when given) is "object", and every
// keyword the schema uses must have a schema's type ("type" a type name or a
// list of them, "properties" an object of schemas, "required" a list of
// names, ...). Keywords it does not know are left alone, as JSON Schema does.
#pragma once

#include <string>

#include "server/json_fields.h"

namespace llmhost::server {

// 400 naming the first offending field ("tools[0].function.parameters.properties.x.type").
MaybeError CheckToolSchema(const OJson& schema, const std::string& path);

}  // namespace llmhost::server
