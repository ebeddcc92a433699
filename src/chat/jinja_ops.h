// Python operators on Values: arithmetic, comparison, membership, slicing,
// printf-style `%` formatting, str.format and json.dumps.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"
#include "chat/jinja_value.h"

namespace llmhost::jinja {

// Raises UndefinedError (or SecurityError) when v is Undefined.
void FailIfUndefined(const Value& v);

Value BinaryOp(Renderer& r, BinOp op, const Value& a, const Value& b);
Value UnaryMinus(const Value& v);
Value UnaryPlus(const Value& v);
// Python a <op> b for ==, !=, <, <=, >, >= (not in/not in).
bool CompareValues(CmpOp op, const Value& a, const Value& b);
// Python `item in container`.
bool Contains(Renderer& r, const Value& container, const Value& item);

// obj[start:stop:step] for str/list/tuple/range. nullopt: Python would raise
// TypeError (the caller turns it into Undefined as Jinja's getitem does).
std::optional<Value> SliceValue(Renderer& r, const Value& obj, const Value& start, const Value& stop,
                                const Value& step);

// fmt % args (printf-style). escape_args: fmt is a Markup, so %s/%r
// arguments that are not Markup are HTML-escaped.
std::string PercentFormat(Renderer& r, std::string_view fmt, const Value& args, bool escape_args = false);
// fmt.format(*args, **kwargs).
std::string StrFormat(Renderer& r, std::string_view fmt, const CallArgs& args);
// format(value, spec).
std::string FormatWithSpec(Renderer& r, const Value& v, std::string_view spec);

struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: single line
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
// Python json.dumps(v, ...). Throws TypeError for values JSON cannot hold.
std::string JsonDumps(Renderer& r, const Value& v, const JsonOptions& options);

}  // namespace llmhost::jinja
