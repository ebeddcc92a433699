// chat_template_kwargs: extra variables a chat template is rendered with
// ({"enable_thinking": false}, {"reasoning_effort": "high"}), from a request
// or from a model's stored settings. Both go through one check, so that a
// value accepted once renders every time after.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

inline constexpr int kTemplateKwargsMaxDepth = 8;          // the kwargs object counts as level 1
inline constexpr size_t kTemplateKwargsMaxBytes = 64 << 10;  // as serialized JSON
inline constexpr size_t kTemplateKwargsMaxKeys = 64;

// OK when `kwargs` is an object of at most 64 variables, each named like a
// Jinja identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes) and none of the
// variables the server sets itself (messages, tools, add_generation_prompt,
// bos_token, eos_token), nesting at most 8 levels and at most 64 KiB as JSON.
// InvalidArgument names `field` and the key: "chat_template_kwargs.a: nests
// deeper than 8 levels".
Status CheckTemplateKwargs(const nlohmann::json& kwargs, std::string_view field);
Status CheckTemplateKwargs(const nlohmann::ordered_json& kwargs, std::string_view field);

}  // namespace llmhost
