// Forcing a tool call (OpenAI tool_choice "required" / a named function,
// Anthropic "any" / "tool"): a grammar whose strings are calls in a model
// family's own tool-call markup (chat/tool_format.h), each call's arguments
// constrained to its tool's parameters schema, so that the output parser
// reads the result exactly as it reads an unconstrained call.
//
// Markup written per family (markers that are special tokens of the
// vocabulary are matched as those tokens, grammar::TokenVocab::SpecialId):
//   hermes        <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//                 (several blocks, "\n" between, when parallel)
//   llama3_json   {"name": "f", "parameters": {...}}   (several joined by "; ")
//   mistral       [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
//   deepseek_v3   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f
//                 ```json\n{...}\n```<｜tool▁call▁end｜>\n...<｜tool▁calls▁end｜>
//   deepseek_v3_1 <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{...}
//                 <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
//   kimi_k2       <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0
//                 <|tool_call_argument_begin|>{...}<|tool_call_end|>
//                 <|tool_calls_section_end|>   (one call: its id numbers it)
//   harmony       [<|channel|>analysis<|message|>...<|end|><|start|>assistant]
//                 <|channel|>commentary to=functions.f <|constrain|>json
//                 <|message|>{...}<|call|>   (one call)
//   qwen3_coder   <tool_call>\n<function=f>\n<parameter=k>\nV\n</parameter>\n
//                 </function>\n</tool_call>
//   glm45         <tool_call>f[\n]<arg_key>k</arg_key>[\n]<arg_value>V</arg_value>
//                 [\n]</tool_call>
//   pythonic      [f(k=V, ...), ...]   (in <|tool_call_start|>...<|tool_call_end|>
//                 where the vocabulary has those tokens)
// In the last three each parameter is written on its own, in the schema's
// order (grammar::AddNamedParameters): qwen3_coder and glm45 write string
// parameters as bare text that never holds the closing tag, others as JSON;
// pythonic writes JSON values (its reader takes true/false/null).
#pragma once

#include <nlohmann/json.hpp>

#include "chat/output_format.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/token_vocab.h"
#include "util/status.h"

namespace llmhost {

struct ToolCallGrammarOptions {
  bool parallel = true;  // several calls in one turn
  int max_calls = 8;     // bound on the calls of one turn when parallel
  // harmony: an analysis message may come first (the request reasons).
  bool analysis_first = false;
  // For every tool's parameters; a tool with function.strict true gets
  // additionalProperties false by default (OpenAI's strict mode).
  grammar::JsonSchemaOptions json;
};

// Whether `format` has a tool-call grammar.
bool HasToolCallGrammar(OutputFormat format);

// `tools`: OpenAI-style function tools ({type, function: {name, parameters,
// strict}}), at least one. InvalidArgument naming the tool
// ("tools[1].function.parameters: ...") for a schema that cannot be enforced.
Result<grammar::RuleId> AddToolCallGrammar(grammar::Grammar& grammar, OutputFormat format,
                                           const nlohmann::ordered_json& tools, const grammar::TokenVocab& vocab,
                                           const ToolCallGrammarOptions& options = {});

}  // namespace llmhost
