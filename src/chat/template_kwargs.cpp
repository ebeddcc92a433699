#include "chat/template_kwargs.h"

#include <algorithm>
#include <string>

namespace llmhost {

namespace {

constexpr std::string_view kServerVariables[] = {"messages", "tools", "add_generation_prompt", "bos_token",
                                                 "eos_token"};

bool IsIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Nesting of `v` (a scalar is 0, [] is 1), stopping once past `limit`.
template <class J>
int Depth(const J& v, int limit) {
  if (!v.is_structured()) return 0;
  if (limit <= 0) return 1;
  int deepest = 0;
  for (const auto& child : v) {
    deepest = std::max(deepest, Depth(child, limit - 1));
    if (deepest >= limit) break;
  }
  return deepest + 1;
}

template <class J>
Status Check(const J& kwargs, std::string_view field) {
  const std::string f(field);
  if (!kwargs.is_object()) return Status::InvalidArgument(f + ": expected an object of template variables");
  if (kwargs.size() > kTemplateKwargsMaxKeys) {
    return Status::InvalidArgument(f + ": at most " + std::to_string(kTemplateKwargsMaxKeys) +
                                   " variables, got " + std::to_string(kwargs.size()));
  }
  for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
    const std::string& key = it.key();
    const std::string kf = f + "." + key;
    if (!IsIdentifier(key)) {
      return Status::InvalidArgument(f + ": '" + key +
                                     "' is not a template variable name (letters, digits and _, at most 64)");
    }
    for (std::string_view reserved : kServerVariables) {
      if (key == reserved) {
        return Status::InvalidArgument(kf + ": '" + key +
                                       "' is set by the server from the request; it cannot be a template kwarg");
      }
    }
    // The kwargs object is level 1, its values start at level 2.
    if (Depth(it.value(), kTemplateKwargsMaxDepth - 1) > kTemplateKwargsMaxDepth - 1) {
      return Status::InvalidArgument(kf + ": nests deeper than " + std::to_string(kTemplateKwargsMaxDepth) +
                                     " levels");
    }
  }
  const size_t bytes = kwargs.dump().size();  // bounded: the depth is checked
  if (bytes > kTemplateKwargsMaxBytes) {
    return Status::InvalidArgument(f + ": " + std::to_string(bytes) + " bytes of JSON, more than the " +
                                   std::to_string(kTemplateKwargsMaxBytes) + " allowed");
  }
  return Status::OK();
}

}  // namespace

Status CheckTemplateKwargs(const nlohmann::json& kwargs, std::string_view field) { return Check(kwargs, field); }
Status CheckTemplateKwargs(const nlohmann::ordered_json& kwargs, std::string_view field) {
  return Check(kwargs, field);
}

}  // namespace llmhost
