// `synth-model --arch scripted`: the scripted test model's directory
// (model/scripted_model.h).
#include "model/scripted_model.h"
#include "model/synth_model.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost {

namespace {

// Hermes tool calls and Qwen3 think blocks, as Qwen3's template renders
// them (shortened): the markers make DetectOutputFormat choose `hermes` with
// reasoning; enable_thinking false writes an empty think block.
const char* const kScriptedTemplate =
    "{%- if tools -%}\n"
    "{{- '<|im_start|>system\\n' -}}\n"
    "{%- if messages[0].role == 'system' -%}{{- messages[0].content + '\\n\\n' -}}{%- endif -%}\n"
    "{{- '# Tools\\n\\n<tools>' -}}\n"
    "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}\n"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n' -}}\n"
    "{%- elif messages[0].role == 'system' -%}\n"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' -}}\n"
    "{%- endif -%}\n"
    "{%- for message in messages -%}\n"
    "{%- if message.role == 'system' and loop.first -%}\n"
    "{%- elif message.role == 'user' or message.role == 'system' -%}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' -}}\n"
    "{%- elif message.role == 'assistant' -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- if message.reasoning_content -%}{{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' -}}{%- endif -%}\n"
    "{{- message.content or '' -}}\n"
    "{%- for call in message.tool_calls or [] -%}\n"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + call.function.name + '\", \"arguments\": ' + (call.function.arguments | tojson) + '}\\n</tool_call>' -}}\n"
    "{%- endfor -%}\n"
    "{{- '<|im_end|>\\n' -}}\n"
    "{%- elif message.role == 'tool' -%}\n"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + (message.content or '') + '\\n</tool_response><|im_end|>\\n' -}}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}\n"
    "{%- endif -%}\n";

}  // namespace

Result<SynthSummary> SynthesizeScriptedModel(const std::string& out_dir, const std::string& script_json,
                                             uint64_t seed, ThreadPool* pool) {
  RETURN_IF_ERROR(ParseScript(script_json).status());
  SynthOptions o;
  o.arch = "llama";
  // Tiny: the weights are loaded but never computed with. 1024 ids give the
  // byte-level BPE multi-byte tokens; KV rows of 16 hold a token id; a long
  // context (64 bytes of KV per token) takes a coding agent's prompts.
  o.config = {{"hidden_size", 32},        {"num_hidden_layers", 1},   {"num_attention_heads", 2},
              {"num_key_value_heads", 1}, {"intermediate_size", 64}, {"vocab_size", 1024},
              {"max_position_embeddings", 131072}};
  o.seed = seed;
  o.out_dir = out_dir;
  o.pool = pool;
  ASSIGN_OR_RETURN(SynthSummary summary, SynthesizeModel(o));
  const std::string config_path = JoinPath(out_dir, "config.json");
  ASSIGN_OR_RETURN(nlohmann::ordered_json config, ReadOrderedJsonFile(config_path, kJsonModelFileMaxBytes));
  config["model_type"] = kScriptedModelType;
  config["architectures"] = nlohmann::ordered_json::array({"LlmhostScriptedForCausalLM"});
  RETURN_IF_ERROR(WriteFileAtomic(config_path, config.dump(2) + "\n"));
  RETURN_IF_ERROR(WriteFileAtomic(JoinPath(out_dir, "chat_template.jinja"), kScriptedTemplate));
  RETURN_IF_ERROR(WriteFileAtomic(JoinPath(out_dir, kScriptFileName), script_json));
  return summary;
}

}  // namespace llmhost
