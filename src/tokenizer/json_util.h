// Small helpers to read tokenizer.json fields with errors that name the field.
// They never throw: a wrong type is reported as InvalidArgument.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost::tok {

using Json = nlohmann::json;

// The member `key` of object `obj`, or nullptr when absent or null.
inline const Json* Field(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

inline Status TypeError(const std::string& ctx, std::string_view key, const char* want) {
  return Status::InvalidArgument(ctx + "." + std::string(key) + ": expected " + want);
}

// Each Read* leaves *out unchanged when the field is absent (or null) and
// `required` is false.
inline Status ReadString(const Json& obj, std::string_view key, const std::string& ctx,
                         std::string* out, bool required = false) {
  const Json* f = Field(obj, key);
  if (f == nullptr) {
    return required ? Status::InvalidArgument(ctx + ": missing field '" + std::string(key) + "'")
                    : Status::OK();
  }
  if (!f->is_string()) return TypeError(ctx, key, "a string");
  *out = f->get_ref<const std::string&>();
  return Status::OK();
}

inline Status ReadBool(const Json& obj, std::string_view key, const std::string& ctx, bool* out,
                       bool required = false) {
  const Json* f = Field(obj, key);
  if (f == nullptr) {
    return required ? Status::InvalidArgument(ctx + ": missing field '" + std::string(key) + "'")
                    : Status::OK();
  }
  if (!f->is_boolean()) return TypeError(ctx, key, "a boolean");
  *out = f->get<bool>();
  return Status::OK();
}

inline Status ReadInt(const Json& obj, std::string_view key, const std::string& ctx, int64_t* out,
                      bool required = false) {
  const Json* f = Field(obj, key);
  if (f == nullptr) {
    return required ? Status::InvalidArgument(ctx + ": missing field '" + std::string(key) + "'")
                    : Status::OK();
  }
  if (!f->is_number_integer()) return TypeError(ctx, key, "an integer");
  *out = f->get<int64_t>();
  return Status::OK();
}

// The "type" of a component object.
inline Result<std::string> ComponentType(const Json& obj, const std::string& ctx) {
  if (!obj.is_object()) return Status::InvalidArgument(ctx + ": expected an object");
  std::string type;
  RETURN_IF_ERROR(ReadString(obj, "type", ctx, &type, /*required=*/true));
  return type;
}

// A pattern given as {"String": "..."} or {"Regex": "..."}.
struct PatternSpec {
  bool is_regex = false;
  std::string text;
};
inline Result<PatternSpec> ReadPattern(const Json& obj, const std::string& ctx) {
  const Json* p = Field(obj, "pattern");
  if (p == nullptr || !p->is_object())
    return Status::InvalidArgument(ctx + ".pattern: expected {\"String\"|\"Regex\": ...}");
  PatternSpec spec;
  if (const Json* s = Field(*p, "String"); s != nullptr && s->is_string()) {
    spec.text = s->get_ref<const std::string&>();
  } else if (const Json* r = Field(*p, "Regex"); r != nullptr && r->is_string()) {
    spec.is_regex = true;
    spec.text = r->get_ref<const std::string&>();
  } else {
    return Status::InvalidArgument(ctx + ".pattern: expected {\"String\"|\"Regex\": string}");
  }
  return spec;
}

}  // namespace llmhost::tok
