// Output format names, and detection from the markers a chat template
// renders: a template that writes a family's tool-call markup for past calls
// (or describes it in its system prompt) is a model that generates it.
#include "chat/output_format.h"

#include <utility>

#include "chat/chat_template.h"

namespace llmhost {
namespace {

const std::pair<OutputFormat, const char*> kNames[] = {
    {OutputFormat::kNone, "none"},
    {OutputFormat::kHermes, "hermes"},
    {OutputFormat::kQwen3Coder, "qwen3_coder"},
    {OutputFormat::kLlama3Json, "llama3_json"},
    {OutputFormat::kMistral, "mistral"},
    {OutputFormat::kPythonic, "pythonic"},
    {OutputFormat::kDeepSeekV3, "deepseek_v3"},
    {OutputFormat::kDeepSeekV31, "deepseek_v31"},
    {OutputFormat::kKimiK2, "kimi_k2"},
    {OutputFormat::kGlm45, "glm45"},
    {OutputFormat::kHarmony, "harmony"},
};

bool Has(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

OutputFormat FormatFromMarkers(std::string_view t) {
  if (Has(t, "<|channel|>")) return OutputFormat::kHarmony;
  if (Has(t, "<|tool_calls_section_begin|>")) return OutputFormat::kKimiK2;
  if (Has(t, "<｜tool▁calls▁begin｜>")) {
    // V3 / R1 write "function<｜tool▁sep｜>NAME" and a ```json fence; V3.1 "NAME<｜tool▁sep｜>{...}".
    return Has(t, "```json") ? OutputFormat::kDeepSeekV3 : OutputFormat::kDeepSeekV31;
  }
  if (Has(t, "<arg_key>")) return OutputFormat::kGlm45;
  if (Has(t, "<tool_call>") && Has(t, "<function=")) return OutputFormat::kQwen3Coder;
  if (Has(t, "[TOOL_CALLS]")) return OutputFormat::kMistral;
  if (Has(t, "<|tool_call_start|>")) return OutputFormat::kPythonic;
  if (Has(t, "<tool_call>")) return OutputFormat::kHermes;
  if (Has(t, "<|python_tag|>")) return OutputFormat::kLlama3Json;
  if (Has(t, "[func_name1(")) return OutputFormat::kPythonic;
  if (Has(t, "<|start_header_id|>") && Has(t, "tools") && Has(t, "\"parameters\"")) return OutputFormat::kLlama3Json;
  return OutputFormat::kNone;
}

OutputFormat FormatFromModelType(std::string_view type) {
  if (type == "gpt_oss") return OutputFormat::kHarmony;
  if (type == "kimi_k2") return OutputFormat::kKimiK2;
  if (type == "deepseek_v3") return OutputFormat::kDeepSeekV3;
  if (type == "glm4_moe") return OutputFormat::kGlm45;
  if (type == "qwen3_moe" || type == "qwen3" || type == "qwen2") return OutputFormat::kHermes;
  if (type == "mistral" || type == "mistral3") return OutputFormat::kMistral;
  if (type == "llama") return OutputFormat::kLlama3Json;
  return OutputFormat::kNone;
}

// Whether the generation prompt, rendered for one user turn, leaves a think
// block open (the model's output then begins inside it).
bool PromptOpensThink(std::string_view source, const nlohmann::ordered_json& kwargs, std::string_view open,
                      std::string_view close) {
  auto tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) return false;
  static constexpr std::string_view kSentinel = "\x01llmhost-user-turn\x01";
  ChatTemplateInput in;
  in.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", std::string(kSentinel)}}});
  in.add_generation_prompt = true;
  if (kwargs.is_object()) in.kwargs = kwargs;
  jinja::RenderLimits limits;
  limits.max_steps = 2'000'000;
  auto text = tmpl->Render(in, limits);
  if (!text.ok()) return false;
  size_t user = text->rfind(kSentinel);
  std::string_view tail = std::string_view(*text).substr(user == std::string::npos ? 0 : user + kSentinel.size());
  size_t o = tail.rfind(open), c = tail.rfind(close);
  return o != std::string_view::npos && (c == std::string_view::npos || c < o);
}

}  // namespace

const char* OutputFormatName(OutputFormat format) {
  for (const auto& [f, name] : kNames) {
    if (f == format) return name;
  }
  return "none";
}

std::vector<std::string> OutputFormatNames() {
  std::vector<std::string> out;
  for (const auto& entry : kNames) out.emplace_back(entry.second);
  return out;
}

Result<OutputFormat> ParseOutputFormat(std::string_view name) {
  for (const auto& [f, n] : kNames) {
    if (name == n) return f;
  }
  std::string valid;
  for (const auto& entry : kNames) valid += (valid.empty() ? "" : ", ") + std::string(entry.second);
  return Status::InvalidArgument("unknown output format '" + std::string(name) + "' (valid: " + valid + ")");
}

DetectedOutputFormat DetectOutputFormat(std::string_view template_source, std::string_view model_type_hint,
                                        const nlohmann::ordered_json& kwargs) {
  DetectedOutputFormat d;
  d.format = FormatFromMarkers(template_source);
  if (d.format == OutputFormat::kNone) d.format = FormatFromModelType(model_type_hint);
  if (d.format == OutputFormat::kHarmony) {
    d.reasoning = true;  // the analysis channel; no think block
    return d;
  }
  std::string_view open = d.format == OutputFormat::kMistral ? "[THINK]" : "<think>";
  std::string_view close = d.format == OutputFormat::kMistral ? "[/THINK]" : "</think>";
  d.reasoning = Has(template_source, open) || Has(template_source, close);
  if (d.reasoning && !template_source.empty()) {
    d.starts_in_reasoning = PromptOpensThink(template_source, kwargs, open, close);
  }
  return d;
}

}  // namespace llmhost
