// Finding where a JSON value ends in text that is still being generated,
// without parsing it: the JSON tool-call formats stream a call's argument
// object as raw text and validate it once it is closed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace llmhost::json_scan {

enum class State { kIncomplete, kComplete, kError };

struct Span {
  State state = State::kIncomplete;
  size_t end = 0;  // kComplete: one past the value; kError: where it went wrong
};

// The extent of the JSON value starting at s[pos] (brackets, strings and
// escapes balanced; scalars end at the first byte that cannot continue them).
Span ScanValue(std::string_view s, size_t pos);

// True when `text` is exactly one valid JSON value (surrounding space allowed).
bool IsValidJson(std::string_view text);

// A call object such as {"name": "f", "arguments": {...}} at s[pos] == '{',
// keys in any order, other keys ignored.
struct CallObject {
  State state = State::kIncomplete;
  size_t end = 0;
  bool name_known = false;
  std::string name;
  // Complete: the arguments object as text ("{}" when absent; a string value
  // holding an object is unwrapped). Incomplete: the raw prefix generated so
  // far when the name came first and the arguments are an object, else "".
  std::string arguments;
};
CallObject ScanCallObject(std::string_view s, size_t pos, const std::vector<std::string_view>& name_keys,
                          const std::vector<std::string_view>& argument_keys);

// An arguments object at s[pos]: complete and valid, or incomplete with the
// raw prefix so far in `arguments`.
CallObject ScanArgumentsObject(std::string_view s, size_t pos);

// `text` as a JSON string literal; bytes >= 0x80 pass through unchanged, so
// quoting a prefix gives a prefix of the quoted whole.
std::string QuoteJson(std::string_view text);
void AppendJsonEscaped(std::string& out, std::string_view text);

}  // namespace llmhost::json_scan
