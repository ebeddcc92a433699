// Fuzzes the HTTP API's request parsing: arbitrary bytes as the JSON body of
// /v1/chat/completions, /v1/completions, /v1/messages,
// /v1/messages/count_tokens, /api/chat, /api/generate, /v1/embeddings,
// /api/embed or /v1/rerank (the first byte picks the route), through the
// bounded JSON parse and the OpenAI / Anthropic / Ollama / embedding request
// parsers; a chat request
// that parses is rendered through a small ChatML template, as the server
// would. Must never crash, hang or exhaust memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chat/chat_template.h"
#include "server/anthropic_request.h"
#include "server/embedding_request.h"
#include "server/host_guard.h"
#include "server/json_fields.h"
#include "server/ollama_request.h"
#include "server/openai_request.h"

namespace {

const llmhost::ChatTemplate& Template() {
  static const llmhost::ChatTemplate* t = [] {
    auto parsed = llmhost::ChatTemplate::Parse(
        "{%- if tools %}{{ tools | tojson }}{% endif %}"
        "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
        "{%- for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }} {{ c.function.arguments | tojson }}"
        "</tool_call>{% endfor %}<|im_end|>\n{% endfor %}"
        "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
    return new llmhost::ChatTemplate(std::move(*parsed));
  }();
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llmhost::server;
  if (size < 1) return 0;
  const int route = data[0] % 9;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  // The bytes as a Host header too (the DNS-rebinding guard parses it).
  (void)IsLoopbackName(HostWithoutPort(body));
  OJson json;
  if (ParseJsonObject(body, &json)) return 0;
  if (route >= 6) {
    EmbeddingsRequest embed;
    RerankRequest rerank;
    if (route == 6) (void)ParseEmbeddingsRequest(json, &embed);
    if (route == 7) {  // both Ollama routes read the same body
      (void)ParseOllamaEmbedRequest(json, &embed);
      EmbeddingsRequest legacy;
      (void)ParseOllamaEmbeddingsRequest(json, &legacy);
    }
    if (route == 8) (void)ParseRerankRequest(json, &rerank);
    return 0;
  }
  InferenceRequest req;
  MaybeError e;
  switch (route) {
    case 0: e = ParseChatCompletionsRequest(json, &req); break;
    case 1: e = ParseCompletionsRequest(json, &req); break;
    case 2: e = ParseMessagesRequest(json, /*count_only=*/false, &req); break;
    case 3: e = ParseMessagesRequest(json, /*count_only=*/true, &req); break;
    case 4: {
      std::vector<std::string> ignored;
      e = ParseOllamaChatRequest(json, &req, &ignored);
      break;
    }
    default: {
      std::vector<std::string> ignored;
      e = ParseOllamaGenerateRequest(json, &req, &ignored);
      break;
    }
  }
  if (e || req.prompt_kind != PromptKind::kChat) return 0;
  llmhost::ChatTemplateInput in;
  in.messages = req.messages;
  in.tools = req.tools;
  in.kwargs = req.chat_template_kwargs;
  llmhost::jinja::RenderLimits limits;
  limits.max_steps = 1000000;
  limits.max_output = 1 << 20;
  (void)Template().Render(in, limits);
  return 0;
}
