// Reading untrusted request JSON: a bounded parse, and typed field readers
// that answer a 400 naming the field ("messages[2].content") when a value
// has the wrong type or range. Absent and null fields read as "not given".
// Fields a reader does not ask for are ignored (clients send many).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

// Returns the ApiError of `expr`, if any.
#define RETURN_IF_API_ERROR(expr)                           \
  do {                                                      \
    if (::llmhost::server::MaybeError _e = (expr)) return _e; \
  } while (0)

namespace llmhost::server {

using OJson = nlohmann::ordered_json;

// Parses `body` as one JSON object. 400 for malformed JSON (with the byte
// offset), a non-object, or nesting deeper than kJsonMaxDepth (util/json.h).
MaybeError ParseJsonObject(std::string_view body, OJson* out);

// "messages" + 2 → "messages[2]"; "a" + "b" → "a.b".
std::string FieldPath(const std::string& parent, const std::string& name);
std::string IndexPath(const std::string& parent, size_t index);

// Readers: `obj` must be an object; `path` names `obj` in messages ("" at the top).
MaybeError ReadBool(const OJson& obj, const char* name, const std::string& path,
                    std::optional<bool>* out);
MaybeError ReadString(const OJson& obj, const char* name, const std::string& path,
                      std::optional<std::string>* out);
MaybeError ReadNumber(const OJson& obj, const char* name, const std::string& path, double min,
                      double max, std::optional<double>* out);
MaybeError ReadInteger(const OJson& obj, const char* name, const std::string& path, int64_t min,
                       int64_t max, std::optional<int64_t>* out);
// A string or an array of strings (OpenAI `stop`); empty strings are dropped.
MaybeError ReadStringList(const OJson& obj, const char* name, const std::string& path,
                          size_t max_items, std::vector<std::string>* out);

// The JSON type name for messages ("string", "array", ...).
std::string JsonTypeName(const OJson& v);

}  // namespace llmhost::server
