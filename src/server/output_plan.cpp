#include "server/output_plan.h"

#include "server/response_format.h"

namespace llmhost::server {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

std::vector<int32_t> MarkupSpecialIds(const Tokenizer& tok, const FormatMarkers& markers) {
  std::vector<int32_t> ids;
  for (const AddedTokenInfo& a : tok.AddedTokens()) {
    if (!a.special || a.content.empty()) continue;
    for (const std::string& m : markers.all) {
      if (!m.empty() && m.find(a.content) != std::string::npos) {
        ids.push_back(a.id);
        break;
      }
    }
  }
  return ids;
}

bool ThinkingEnabled(const nlohmann::ordered_json& kwargs) {
  if (!kwargs.is_object()) return true;
  for (const char* key : {"enable_thinking", "thinking"}) {
    auto it = kwargs.find(key);
    if (it != kwargs.end() && it->is_boolean() && !it->get<bool>()) return false;
  }
  return true;
}

bool PromptOpensThinkBlock(const std::string& prompt, const std::string& open, const std::string& close) {
  if (open.empty()) return false;
  size_t end = prompt.size();
  while (end > 0 && IsSpace(prompt[end - 1])) --end;
  // The generation prompt's own text: a think block opened earlier (a user
  // quoting "<think>") does not count.
  constexpr size_t kTail = 64;
  const size_t at = prompt.rfind(open, end);
  if (at == std::string::npos || at + open.size() + kTail < end) return false;
  const size_t closed = close.empty() ? std::string::npos : prompt.rfind(close, end);
  return closed == std::string::npos || closed < at;
}

OutputPlan PlanOutput(const InferenceRequest& r, const ServedModel& model, const ModelSettings& settings,
                      const std::string& prompt, GenerationRequest* gen) {
  OutputPlan plan;
  // Chat turns are parsed (Ollama's generate renders its prompt as one, but for raw prompts).
  const bool chat = r.api == ApiKind::kChatCompletions || r.api == ApiKind::kMessages ||
                    r.api == ApiKind::kResponses || r.api == ApiKind::kOllamaChat ||
                    (r.api == ApiKind::kOllamaGenerate && r.prompt_kind == PromptKind::kChat);
  if (!chat) return plan;
  plan.enabled = true;
  const DetectedOutputFormat& detected = model.output_format;
  plan.format = detected.format;
  if (settings.tool_parser) {
    if (Result<OutputFormat> f = ParseOutputFormat(*settings.tool_parser); f.ok()) plan.format = *f;
  }
  // tool_choice none: the model was not shown the tools; what it writes is text.
  if (r.tool_choice.mode == ToolChoice::kNone) plan.format = OutputFormat::kNone;
  const FormatMarkers markers = OutputFormatMarkers(plan.format);
  const bool thinking = ThinkingEnabled(r.chat_template_kwargs);
  const bool opened = thinking && PromptOpensThinkBlock(prompt, markers.think_open, markers.think_close);
  plan.options.tools = nlohmann::json::parse(r.tools.dump());
  plan.options.reasoning = thinking && (detected.reasoning || opened || plan.format == OutputFormat::kHarmony);
  plan.options.starts_in_reasoning = opened;
  plan.options.call_id_prefix = NewResponseId(r.api == ApiKind::kMessages ? "toolu_" : "call_");
  plan.parallel = r.tool_choice.parallel;

  gen->keep_special_ids = MarkupSpecialIds(*model.tokenizer, markers);
  if (r.reasoning_budget && *r.reasoning_budget > 0 && plan.options.reasoning) {
    ReasoningBudget b;
    b.budget_tokens = *r.reasoning_budget;
    b.starts_open = opened;
    b.open = markers.think_open;
    b.close = markers.think_close;
    b.close_ids = model.tokenizer->Encode(markers.forced_close, /*add_special=*/false);
    gen->reasoning_budget = std::move(b);
  }
  return plan;
}

}  // namespace llmhost::server
