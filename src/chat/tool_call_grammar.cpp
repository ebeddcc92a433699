#include "chat/tool_call_grammar.h"

#include <string>
#include <vector>

namespace llmhost {

namespace {

using grammar::Grammar;
using grammar::NodeId;
using grammar::RuleId;

// A marker: its special token where the vocabulary has one, else its bytes.
NodeId Marker(Grammar& g, const grammar::TokenVocab& vocab, std::string_view text) {
  const TokenId id = vocab.SpecialId(text);
  return id >= 0 ? g.Token(id) : g.Literal(text);
}

struct Tool {
  std::string name;
  NodeId arguments;  // the parameters' JSON object
};

Result<std::vector<Tool>> ToolArguments(Grammar& g, const nlohmann::ordered_json& tools,
                                        const ToolCallGrammarOptions& o) {
  std::vector<Tool> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    const nlohmann::ordered_json& fn = tools[i]["function"];
    const std::string path = "tools[" + std::to_string(i) + "].function.parameters";
    grammar::JsonSchemaOptions json = o.json;
    if (fn.value("strict", false)) json.default_additional_properties = false;
    auto params = fn.find("parameters");
    const nlohmann::ordered_json schema = params != fn.end() && !params->is_null()
                                              ? *params
                                              : nlohmann::ordered_json{{"type", "object"}};
    Result<RuleId> rule = grammar::AddJsonSchema(g, schema, json);
    if (!rule.ok()) return rule.status().WithContext(path);
    out.push_back({fn["name"].get<std::string>(), g.Ref(*rule)});
  }
  return out;
}

// One or, when parallel, up to max_calls of `one`, `sep` between.
NodeId Calls(Grammar& g, NodeId one, NodeId sep, const ToolCallGrammarOptions& o) {
  if (!o.parallel || o.max_calls <= 1) return one;
  return g.Seq({one, g.Repeat(g.Seq({sep, one}), 0, o.max_calls - 1)});
}

std::string JsonString(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

bool HasToolCallGrammar(OutputFormat format) {
  switch (format) {
    case OutputFormat::kHermes:
    case OutputFormat::kLlama3Json:
    case OutputFormat::kMistral:
    case OutputFormat::kDeepSeekV31:
    case OutputFormat::kKimiK2: return true;
    default: return false;
  }
}

Result<grammar::RuleId> AddToolCallGrammar(Grammar& g, OutputFormat format, const nlohmann::ordered_json& tools,
                                           const grammar::TokenVocab& vocab, const ToolCallGrammarOptions& o) {
  if (!HasToolCallGrammar(format)) {
    return Status::NotSupported(std::string("forcing a tool call is not supported for the '") +
                                OutputFormatName(format) + "' tool-call format yet");
  }
  if (!tools.is_array() || tools.empty()) return Status::InvalidArgument("forcing a tool call needs at least one tool");
  ASSIGN_OR_RETURN(std::vector<Tool> list, ToolArguments(g, tools, o));
  std::vector<NodeId> calls;
  NodeId root = -1;
  switch (format) {
    case OutputFormat::kHermes:
      for (const Tool& t : list) {
        calls.push_back(g.Seq({Marker(g, vocab, "<tool_call>"), g.Literal("\n{\"name\": " + JsonString(t.name) +
                                                                          ", \"arguments\": "),
                               t.arguments, g.Literal("}\n"), Marker(g, vocab, "</tool_call>")}));
      }
      root = Calls(g, g.Alt(calls), g.Literal("\n"), o);
      break;
    case OutputFormat::kLlama3Json:
      for (const Tool& t : list) {
        calls.push_back(g.Seq({g.Literal("{\"name\": " + JsonString(t.name) + ", \"parameters\": "), t.arguments,
                               g.Literal("}")}));
      }
      root = Calls(g, g.Alt(calls), g.Literal("; "), o);
      break;
    case OutputFormat::kMistral:
      for (const Tool& t : list) {
        calls.push_back(g.Seq({g.Literal("{\"name\": " + JsonString(t.name) + ", \"arguments\": "), t.arguments,
                               g.Literal("}")}));
      }
      root = g.Seq({Marker(g, vocab, "[TOOL_CALLS]"), g.Literal("["), Calls(g, g.Alt(calls), g.Literal(", "), o),
                    g.Literal("]")});
      break;
    case OutputFormat::kDeepSeekV31:
      for (const Tool& t : list) {
        calls.push_back(g.Seq({Marker(g, vocab, "<｜tool▁call▁begin｜>"), g.Literal(t.name),
                               Marker(g, vocab, "<｜tool▁sep｜>"), t.arguments, Marker(g, vocab, "<｜tool▁call▁end｜>")}));
      }
      root = g.Seq({Marker(g, vocab, "<｜tool▁calls▁begin｜>"), Calls(g, g.Alt(calls), g.Empty(), o),
                    Marker(g, vocab, "<｜tool▁calls▁end｜>")});
      break;
    case OutputFormat::kKimiK2:
      // The call's id (functions.NAME:INDEX) is the call's id in the API:
      // one call, so that ids stay unique.
      for (const Tool& t : list) {
        calls.push_back(g.Seq({Marker(g, vocab, "<|tool_call_begin|>"), g.Literal("functions." + t.name + ":0"),
                               Marker(g, vocab, "<|tool_call_argument_begin|>"), t.arguments,
                               Marker(g, vocab, "<|tool_call_end|>")}));
      }
      root = g.Seq({Marker(g, vocab, "<|tool_calls_section_begin|>"), g.Alt(calls),
                    Marker(g, vocab, "<|tool_calls_section_end|>")});
      break;
    default: break;
  }
  const RuleId rule = g.AddRule("tool_calls");
  g.SetBody(rule, root);
  return rule;
}

}  // namespace llmhost
