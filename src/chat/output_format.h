// The tool-call / reasoning markup a model family writes, and choosing it
// from a model's chat template (the markers the template renders).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

enum class OutputFormat {
  kNone,         // no tool calls; only the think block
  kHermes,       // <tool_call>{"name", "arguments"}</tool_call> (Hermes, Qwen2.5, Qwen3)
  kQwen3Coder,   // <tool_call><function=NAME><parameter=P>V</parameter></function></tool_call>
  kLlama3Json,   // [<|python_tag|>]{"name", "parameters"}: the whole output is the call
  kMistral,      // [TOOL_CALLS][{...}] or [TOOL_CALLS]NAME[ARGS]{...}
  kPythonic,     // [f(a=1), g()] (Llama 3.2/4, LFM2)
  kDeepSeekV3,   // DeepSeek V3 / R1: function<｜tool▁sep｜>NAME\n```json ...```
  kDeepSeekV31,  // DeepSeek V3.1: NAME<｜tool▁sep｜>{...}
  kKimiK2,       // <|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{...}
  kGlm45,        // <tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>
  kHarmony,      // gpt-oss channels
};

const char* OutputFormatName(OutputFormat format);
std::vector<std::string> OutputFormatNames();

// "hermes", "qwen3_coder", ...; InvalidArgument listing the valid names.
Result<OutputFormat> ParseOutputFormat(std::string_view name);

struct DetectedOutputFormat {
  OutputFormat format = OutputFormat::kNone;
  bool reasoning = false;            // the template renders a think block
  bool starts_in_reasoning = false;  // its generation prompt ends inside one
};

// Chooses the format from the template's source (the markers it renders) and
// renders its generation prompt (with `kwargs`, e.g. enable_thinking) to see
// whether it opens a think block. `model_type_hint` (config.json's model_type,
// may be empty) breaks ties where the template says nothing.
DetectedOutputFormat DetectOutputFormat(std::string_view template_source, std::string_view model_type_hint,
                                        const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object());

}  // namespace llmhost
