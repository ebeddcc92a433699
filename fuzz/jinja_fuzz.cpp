// Fuzzes the chat template engine: arbitrary bytes as a template, parsed and
// rendered against a small fixed conversation with tools. Must never crash,
// hang or exhaust memory; tight render limits keep every input fast.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"

namespace {

const llmhost::ChatTemplateInput& Conversation() {
  static const llmhost::ChatTemplateInput* input = [] {
    auto* in = new llmhost::ChatTemplateInput();
    in->messages = nlohmann::ordered_json::parse(R"([
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris? \u00fc\u65e5 {{ x }}"},
      {"role": "assistant", "content": "", "reasoning_content": "think",
       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"},
      {"role": "user", "content": [{"type": "text", "text": "Thanks"}, {"type": "image"}]}
    ])");
    in->tools = nlohmann::ordered_json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "description": "Get weather",
       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    ])");
    in->kwargs = {{"enable_thinking", true}, {"n", 3}, {"f", 0.5}};
    in->bos_token = "<s>";
    in->eos_token = "</s>";
    std::tm t{};
    t.tm_year = 124;
    t.tm_mon = 6;
    t.tm_mday = 26;
    t.tm_hour = 12;
    in->now_local = t;
    return in;
  }();
  return *input;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 32 * 1024) return 0;
  std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = llmhost::ChatTemplate::Parse(source);
  if (!tmpl.ok()) return 0;
  llmhost::jinja::RenderLimits limits;
  limits.max_steps = 300'000;
  limits.max_output = 1u << 20;
  limits.max_call_depth = 50;
  limits.max_namespaces = 100;
  auto out = tmpl->Render(Conversation(), limits);
  (void)out;
  return 0;
}
