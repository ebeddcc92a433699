// Registries of filters, tests, methods of builtin types and globals.
#pragma once

#include <string_view>

#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace llmhost::jinja {

// Null when no filter/test has that name.
FilterFn FindFilter(std::string_view name);
TestFn FindTest(std::string_view name);

// Attribute lookup on str/list/dict/int/float values as Python getattr()
// does: a bound method when the type has one. Mutating methods of list and
// dict give an unsafe Undefined (SecurityError when called), as the
// immutable sandbox does. False when the type has no such attribute.
bool GetBuiltinAttr(const Value& self, std::string_view name, Value* out);

// Globals: range, dict, namespace, lipsum-free subset of Jinja's defaults.
bool GetGlobal(std::string_view name, Value* out);

}  // namespace llmhost::jinja
