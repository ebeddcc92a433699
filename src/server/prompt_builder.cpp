#include "server/prompt_builder.h"

#include <algorithm>

namespace llmhost::server {

namespace {

bool HasLateSystemMessage(const nlohmann::ordered_json& messages) {
  for (size_t i = 1; i < messages.size(); ++i) {
    if (messages[i].value("role", "") == "system") return true;
  }
  return false;
}

}  // namespace

MaybeError RenderChat(const InferenceRequest& request, const ServedModel& model, std::string* text) {
  if (!model.chat_template) {
    if (!model.chat_template_error.empty()) {
      return BadRequest("the model '" + model.entry.id + "' cannot render chats: " + model.chat_template_error +
                        " (fix the model's template, or send a raw prompt to /v1/completions)");
    }
    return BadRequest("the model '" + model.entry.id +
                      "' has no chat template: send a raw prompt to /v1/completions instead");
  }
  ChatTemplateInput in;
  in.messages = request.messages;
  in.tools = request.tools;
  in.add_generation_prompt = request.add_generation_prompt;
  in.kwargs = request.chat_template_kwargs;
  in.bos_token = model.bos_token;
  in.eos_token = model.eos_token;
  Result<std::string> r = model.chat_template->Render(in);
  if (!r.ok() && HasLateSystemMessage(in.messages)) {
    // Clients (Claude Code) put system messages mid-conversation; many
    // templates only allow one at the start. Retry with those as user turns.
    for (size_t i = 1; i < in.messages.size(); ++i) {
      if (in.messages[i].value("role", "") == "system") in.messages[i]["role"] = "user";
    }
    Result<std::string> retry = model.chat_template->Render(in);
    if (retry.ok()) r = std::move(retry);
  }
  if (!r.ok()) return BadRequest("chat template error: " + r.status().message(), "messages");
  *text = std::move(*r);
  return std::nullopt;
}

MaybeError BuildPromptIds(const InferenceRequest& request, const ServedModel& model,
                          std::vector<int32_t>* ids, std::string* rendered) {
  const Tokenizer& tok = *model.tokenizer;
  switch (request.prompt_kind) {
    case PromptKind::kChat: {
      std::string text;
      RETURN_IF_API_ERROR(RenderChat(request, model, &text));
      // The template writes BOS itself where the family has one (as
      // transformers' apply_chat_template, which encodes without specials).
      *ids = tok.Encode(text, /*add_special=*/false);
      if (rendered) *rendered = std::move(text);
      break;
    }
    case PromptKind::kText:
      *ids = tok.Encode(request.prompt_text, /*add_special=*/true);
      break;
    case PromptKind::kTokens: {
      const int64_t vocab = model.engine->vocab_size();
      for (size_t i = 0; i < request.prompt_ids.size(); ++i) {
        if (request.prompt_ids[i] >= vocab) {
          return BadRequest("'prompt[" + std::to_string(i) + "]': token id " +
                                std::to_string(request.prompt_ids[i]) + " is outside the vocabulary (" +
                                std::to_string(vocab) + " ids)",
                            "prompt");
        }
      }
      *ids = request.prompt_ids;
      break;
    }
  }
  if (ids->empty()) {
    return BadRequest("the prompt is empty (it encodes to no tokens)",
                      request.prompt_kind == PromptKind::kChat ? "messages" : "prompt");
  }
  const int64_t context = model.engine->context_length();
  if (request.api != ApiKind::kCountTokens && static_cast<int64_t>(ids->size()) >= context) {
    ApiError e = BadRequest("Prompt too long: " + std::to_string(ids->size()) +
                                " tokens exceeds max context window of " + std::to_string(context) +
                                " tokens",
                            request.prompt_kind == PromptKind::kChat ? "messages" : "prompt");
    e.code = "context_length_exceeded";
    return e;
  }
  return std::nullopt;
}

void ApplyModelSettings(const ModelSettings& m, InferenceRequest* r) {
  SamplingRequest& q = r->sampling;
  auto fill = [](auto& field, const auto& value) {
    if (!field && value) field = *value;
  };
  fill(q.temperature, m.sampling.temperature);
  fill(q.top_p, m.sampling.top_p);
  fill(q.top_k, m.sampling.top_k);
  fill(q.min_p, m.sampling.min_p);
  fill(q.repetition_penalty, m.sampling.repetition_penalty);
  fill(q.presence_penalty, m.sampling.presence_penalty);
  fill(q.frequency_penalty, m.sampling.frequency_penalty);
  fill(q.max_tokens, m.max_tokens);
  if (m.chat_template_kwargs.is_object() && !m.chat_template_kwargs.empty()) {
    nlohmann::ordered_json merged = nlohmann::ordered_json::object();
    for (const auto& [k, v] : m.chat_template_kwargs.items()) merged[k] = nlohmann::ordered_json::parse(v.dump());
    if (r->chat_template_kwargs.is_object()) {
      for (const auto& [k, v] : r->chat_template_kwargs.items()) merged[k] = v;
    }
    r->chat_template_kwargs = std::move(merged);
  }
}

SamplingParams ResolveSampling(const SamplingRequest& r, const GenerationConfig& g) {
  SamplingParams p;
  p.temperature = r.temperature.value_or(g.temperature.value_or(1.0));
  // do_sample false in generation_config means greedy by default.
  if (!r.temperature && g.do_sample.has_value() && !*g.do_sample) p.temperature = 0;
  p.top_p = r.top_p.value_or(g.top_p.value_or(0.95));
  if (p.top_p <= 0) p.top_p = 1e-9;  // top_p 0 keeps the most likely token only
  const int64_t top_k = r.top_k.value_or(g.top_k.value_or(0));
  p.top_k = static_cast<int32_t>(std::clamp<int64_t>(top_k, 0, INT32_MAX));
  p.min_p = r.min_p.value_or(g.min_p.value_or(0.0));
  p.repetition_penalty = r.repetition_penalty.value_or(g.repetition_penalty.value_or(1.0));
  p.presence_penalty = r.presence_penalty.value_or(0.0);
  p.frequency_penalty = r.frequency_penalty.value_or(0.0);
  p.seed = r.seed;
  p.logit_bias = r.logit_bias;
  p.logprobs = r.logprobs;
  p.top_logprobs = std::min(r.top_logprobs, static_cast<int>(kMaxTopLogprobs));
  return p;
}

GenerationRequest MakeGenerationRequest(const InferenceRequest& request, const ServedModel& model,
                                        std::vector<int32_t> prompt) {
  GenerationRequest g;
  g.prompt = std::move(prompt);
  g.sampling = ResolveSampling(request.sampling, model.generation);
  g.max_tokens = request.sampling.max_tokens;
  g.stop = request.sampling.stop;
  g.stop_token_ids = request.sampling.stop_token_ids;
  g.ignore_eos = request.sampling.ignore_eos;
  g.skip_special_tokens = true;
  return g;
}

}  // namespace llmhost::server
