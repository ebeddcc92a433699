// Internal: the builtin files register their functions into these tables,
// and share a few helpers.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chat/jinja_args.h"
#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"
#include "chat/jinja_value.h"

namespace llmhost::jinja {

using FilterTable = std::unordered_map<std::string_view, FilterFn>;
using TestTable = std::unordered_map<std::string_view, TestFn>;

void RegisterStringFilters(FilterTable& t);
void RegisterSeqFilters(FilterTable& t);
void RegisterTests(TestTable& t);

// Python len(); TypeError for values without a length.
int64_t PyLen(const Value& v);
// Python str.splitlines(keepends).
std::vector<std::string> SplitLines(std::string_view s, bool keepends);
// Python's int(str, base) and float(str); false when Python would raise.
bool ParsePyInt(std::string_view s, int base, int64_t* out);
bool ParsePyFloat(std::string_view s, double* out);
// Jinja's attribute getter: "a.b.0" splits on dots, digit parts index.
Value GetAttrPath(Renderer& r, const Value& item, const Value& attribute);

}  // namespace llmhost::jinja
