// Python call lists as some models write tool calls ([f(a=1, b="x"), g()]):
// keyword arguments whose values are Python literals (str, int, float,
// True/False/None, lists, tuples, dicts), turned into JSON.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/json_scan.h"

namespace llmhost {

struct PythonCall {
  std::string name;
  std::string arguments;  // a JSON object as text, keys in the order written
};

// The whole of `text` must be one list of calls; nullopt otherwise.
std::optional<std::vector<PythonCall>> ParsePythonCalls(std::string_view text);

// The extent of the bracketed expression at s[pos] (quotes respected).
json_scan::Span ScanPythonBrackets(std::string_view s, size_t pos);

}  // namespace llmhost
