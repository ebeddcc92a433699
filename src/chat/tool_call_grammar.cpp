#include "chat/tool_call_grammar.h"

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "chat/tool_args.h"

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

// The parameters schema of tools[i] (an empty object when it has none) and
// the JSON Schema options for it.
const nlohmann::ordered_json& ParametersOf(const nlohmann::ordered_json& fn) {
  static const nlohmann::ordered_json kEmpty = {{"type", "object"}};
  auto params = fn.find("parameters");
  return params != fn.end() && !params->is_null() ? *params : kEmpty;
}

grammar::JsonSchemaOptions JsonOptionsOf(const nlohmann::ordered_json& fn, const ToolCallGrammarOptions& o) {
  grammar::JsonSchemaOptions json = o.json;
  if (fn.value("strict", false)) json.default_additional_properties = false;
  return json;
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
    Result<RuleId> rule = grammar::AddJsonSchema(g, ParametersOf(fn), JsonOptionsOf(fn, o));
    if (!rule.ok()) return rule.status().WithContext(path);
    out.push_back({fn["name"].get<std::string>(), g.Ref(*rule)});
  }
  return out;
}

// Formats that write each parameter on its own. `bare_stop` set: string
// parameters are bare text ended by that tag (the XML-like formats, whose
// readers type a parameter's text by its schema, chat/tool_args.h); unset:
// every value is JSON-like text (pythonic).
struct NamedTool {
  std::string name;
  std::vector<grammar::NamedParameter> parameters;
};

Result<std::vector<NamedTool>> NamedTools(Grammar& g, const nlohmann::ordered_json& tools, const std::string& bare_stop,
                                          const ToolCallGrammarOptions& o) {
  std::vector<NamedTool> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    const nlohmann::ordered_json& fn = tools[i]["function"];
    const nlohmann::ordered_json& schema = ParametersOf(fn);
    const nlohmann::json root = nlohmann::json::parse(schema.dump());
    grammar::NamedParametersOptions po;
    po.json = JsonOptionsOf(fn, o);
    po.stop = bare_stop;
    if (!bare_stop.empty()) {
      po.form = [&root](const nlohmann::ordered_json& property) {
        const std::string type = ParameterType(nlohmann::json::parse(property.dump()), root);
        grammar::ParameterForm form;
        form.bare = IsStringType(type);
        if (!form.bare) form.json_type = type;
        return form;
      };
    }
    Result<std::vector<grammar::NamedParameter>> params = grammar::AddNamedParameters(g, schema, po);
    if (!params.ok()) return params.status().WithContext("tools[" + std::to_string(i) + "].function.parameters");
    out.push_back({fn["name"].get<std::string>(), std::move(*params)});
  }
  return out;
}

// The parameters in order, each written by `one`; optional ones may be left
// out; `sep` between two that are written.
NodeId ParameterList(Grammar& g, const std::vector<grammar::NamedParameter>& params,
                     const std::function<NodeId(const grammar::NamedParameter&)>& one, NodeId sep) {
  // tail[i][w]: the parameters from i on, after w (0/1) were written. Each
  // cell is a rule, reached both by taking and by skipping the ones before.
  const size_t n = params.size();
  std::vector<std::array<NodeId, 2>> tail(n + 1, {g.Empty(), g.Empty()});
  for (size_t i = n; i-- > 0;) {
    for (int w = 0; w < 2; ++w) {
      std::vector<NodeId> alts;
      alts.push_back(w ? g.Seq({sep, one(params[i]), tail[i + 1][1]}) : g.Seq({one(params[i]), tail[i + 1][1]}));
      if (!params[i].required) alts.push_back(tail[i + 1][w]);
      const RuleId rule = g.AddRule("parameters from " + params[i].name);
      g.SetBody(rule, g.Alt(std::move(alts)));
      tail[i][w] = g.Ref(rule);
    }
  }
  return tail[0][0];
}

bool IsPythonName(std::string_view s, bool dotted) {
  if (s.empty()) return false;
  bool start = true;
  for (char c : s) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (dotted && c == '.' && !start) {
      start = true;
      continue;
    }
    if (!letter && !(digit && !start)) return false;
    start = false;
  }
  return !start;
}

// One or, when parallel, up to max_calls of `one`, `sep` between.
NodeId Calls(Grammar& g, NodeId one, NodeId sep, const ToolCallGrammarOptions& o) {
  if (!o.parallel || o.max_calls <= 1) return one;
  return g.Seq({one, g.Repeat(g.Seq({sep, one}), 0, o.max_calls - 1)});
}

std::string JsonString(const std::string& s) { return nlohmann::json(s).dump(); }

// Formats whose calls carry the arguments as one JSON object.
Result<NodeId> JsonArgumentCalls(Grammar& g, OutputFormat format, const nlohmann::ordered_json& tools,
                                 const grammar::TokenVocab& vocab, const ToolCallGrammarOptions& o) {
  ASSIGN_OR_RETURN(std::vector<Tool> list, ToolArguments(g, tools, o));
  std::vector<NodeId> calls;
  switch (format) {
    case OutputFormat::kHermes:
      for (const Tool& t : list) {
        calls.push_back(g.Seq({Marker(g, vocab, "<tool_call>"), g.Literal("\n{\"name\": " + JsonString(t.name) +
                                                                          ", \"arguments\": "),
                               t.arguments, g.Literal("}\n"), Marker(g, vocab, "</tool_call>")}));
      }
      return Calls(g, g.Alt(calls), g.Literal("\n"), o);
    case OutputFormat::kLlama3Json:
      for (const Tool& t : list) {
        calls.push_back(g.Seq({g.Literal("{\"name\": " + JsonString(t.name) + ", \"parameters\": "), t.arguments,
                               g.Literal("}")}));
      }
      return Calls(g, g.Alt(calls), g.Literal("; "), o);
    case OutputFormat::kMistral:
      for (const Tool& t : list) {
        calls.push_back(g.Seq({g.Literal("{\"name\": " + JsonString(t.name) + ", \"arguments\": "), t.arguments,
                               g.Literal("}")}));
      }
      return g.Seq({Marker(g, vocab, "[TOOL_CALLS]"), g.Literal("["), Calls(g, g.Alt(calls), g.Literal(", "), o),
                    g.Literal("]")});
    case OutputFormat::kDeepSeekV3:
    case OutputFormat::kDeepSeekV31: {
      const bool v31 = format == OutputFormat::kDeepSeekV31;
      for (const Tool& t : list) {
        std::vector<NodeId> parts = {Marker(g, vocab, "<｜tool▁call▁begin｜>")};
        if (v31) {
          parts.insert(parts.end(), {g.Literal(t.name), Marker(g, vocab, "<｜tool▁sep｜>"), t.arguments});
        } else {
          parts.insert(parts.end(), {g.Literal("function"), Marker(g, vocab, "<｜tool▁sep｜>"),
                                     g.Literal(t.name + "\n```json\n"), t.arguments, g.Literal("\n```")});
        }
        parts.push_back(Marker(g, vocab, "<｜tool▁call▁end｜>"));
        calls.push_back(g.Seq(std::move(parts)));
      }
      return g.Seq({Marker(g, vocab, "<｜tool▁calls▁begin｜>"),
                    Calls(g, g.Alt(calls), v31 ? g.Empty() : g.Literal("\n"), o),
                    Marker(g, vocab, "<｜tool▁calls▁end｜>")});
    }
    case OutputFormat::kKimiK2:
      // The call's id (functions.NAME:INDEX) is the call's id in the API:
      // one call, so that ids stay unique.
      for (const Tool& t : list) {
        calls.push_back(g.Seq({Marker(g, vocab, "<|tool_call_begin|>"), g.Literal("functions." + t.name + ":0"),
                               Marker(g, vocab, "<|tool_call_argument_begin|>"), t.arguments,
                               Marker(g, vocab, "<|tool_call_end|>")}));
      }
      return g.Seq({Marker(g, vocab, "<|tool_calls_section_begin|>"), g.Alt(calls),
                    Marker(g, vocab, "<|tool_calls_section_end|>")});
    case OutputFormat::kHarmony: {
      // One message to one function (the template renders one per turn),
      // after an analysis message where the request reasons.
      for (const Tool& t : list) {
        calls.push_back(g.Seq({Marker(g, vocab, "<|channel|>"), g.Literal("commentary to=functions." + t.name + " "),
                               Marker(g, vocab, "<|constrain|>"), g.Literal("json"), Marker(g, vocab, "<|message|>"),
                               t.arguments, Marker(g, vocab, "<|call|>")}));
      }
      if (!o.analysis_first) return g.Alt(calls);
      // The analysis text never spells a marker ("<|") in plain bytes.
      ASSIGN_OR_RETURN(NodeId text, grammar::AddTextAvoiding(g, "<|"));
      const NodeId analysis = g.Seq({Marker(g, vocab, "<|channel|>"), g.Literal("analysis"),
                                     Marker(g, vocab, "<|message|>"), text, Marker(g, vocab, "<|end|>"),
                                     Marker(g, vocab, "<|start|>"), g.Literal("assistant")});
      return g.Seq({g.Optional(analysis), g.Alt(calls)});
    }
    default: break;
  }
  return Status::Internal(std::string("no JSON-argument calls for '") + OutputFormatName(format) + "'");
}

// Formats whose calls write each parameter on its own.
Result<NodeId> NamedParameterCalls(Grammar& g, OutputFormat format, const nlohmann::ordered_json& tools,
                                   const grammar::TokenVocab& vocab, const ToolCallGrammarOptions& o) {
  const std::string stop = format == OutputFormat::kQwen3Coder ? "</parameter>"
                           : format == OutputFormat::kGlm45    ? "</arg_value>"
                                                               : "";
  ASSIGN_OR_RETURN(std::vector<NamedTool> list, NamedTools(g, tools, stop, o));
  std::vector<NodeId> calls;
  switch (format) {
    case OutputFormat::kQwen3Coder: {
      auto one = [&](const grammar::NamedParameter& p) {
        return g.Seq({g.Literal("<parameter=" + p.name + ">\n"), p.value, g.Literal("\n</parameter>\n")});
      };
      for (const NamedTool& t : list) {
        calls.push_back(g.Seq({Marker(g, vocab, "<tool_call>"), g.Literal("\n<function=" + t.name + ">\n"),
                               ParameterList(g, t.parameters, one, g.Empty()), g.Literal("</function>\n"),
                               Marker(g, vocab, "</tool_call>")}));
      }
      return Calls(g, g.Alt(calls), g.Literal("\n"), o);
    }
    case OutputFormat::kGlm45: {
      // GLM-4.5 puts a newline after the name and each tag pair, 4.7 none.
      const NodeId nl = g.Optional(g.Literal("\n"));
      auto one = [&](const grammar::NamedParameter& p) {
        return g.Seq({Marker(g, vocab, "<arg_key>"), g.Literal(p.name), Marker(g, vocab, "</arg_key>"), nl,
                      Marker(g, vocab, "<arg_value>"), p.value, Marker(g, vocab, "</arg_value>"), nl});
      };
      for (const NamedTool& t : list) {
        calls.push_back(g.Seq({Marker(g, vocab, "<tool_call>"), g.Literal(t.name), nl,
                               ParameterList(g, t.parameters, one, g.Empty()), Marker(g, vocab, "</tool_call>")}));
      }
      return Calls(g, g.Alt(calls), nl, o);
    }
    case OutputFormat::kPythonic: {
      auto one = [&](const grammar::NamedParameter& p) { return g.Seq({g.Literal(p.name + "="), p.value}); };
      for (size_t i = 0; i < list.size(); ++i) {
        const NamedTool& t = list[i];
        if (!IsPythonName(t.name, /*dotted=*/true))
          return Status::InvalidArgument("tools[" + std::to_string(i) + "].function.name: '" + t.name +
                                         "' is not a Python name, as pythonic calls need");
        for (const grammar::NamedParameter& p : t.parameters) {
          if (!IsPythonName(p.name, /*dotted=*/false))
            return Status::InvalidArgument("tools[" + std::to_string(i) + "].function.parameters: '" + p.name +
                                           "' is not a Python name, as pythonic calls need");
        }
        calls.push_back(g.Seq({g.Literal(t.name + "("), ParameterList(g, t.parameters, one, g.Literal(", ")),
                               g.Literal(")")}));
      }
      const NodeId list_node = g.Seq({g.Literal("["), Calls(g, g.Alt(calls), g.Literal(", "), o), g.Literal("]")});
      // LFM2 wraps the list in its own special tokens.
      if (vocab.SpecialId("<|tool_call_start|>") < 0) return list_node;
      return g.Seq({Marker(g, vocab, "<|tool_call_start|>"), list_node, Marker(g, vocab, "<|tool_call_end|>")});
    }
    default: break;
  }
  return Status::Internal(std::string("no named-parameter calls for '") + OutputFormatName(format) + "'");
}

}  // namespace

bool HasToolCallGrammar(OutputFormat format) { return format != OutputFormat::kNone; }

Result<grammar::RuleId> AddToolCallGrammar(Grammar& g, OutputFormat format, const nlohmann::ordered_json& tools,
                                           const grammar::TokenVocab& vocab, const ToolCallGrammarOptions& o) {
  if (!HasToolCallGrammar(format)) {
    return Status::NotSupported(std::string("forcing a tool call is not supported for the '") +
                                OutputFormatName(format) + "' tool-call format");
  }
  if (!tools.is_array() || tools.empty()) return Status::InvalidArgument("forcing a tool call needs at least one tool");
  const bool named = format == OutputFormat::kQwen3Coder || format == OutputFormat::kGlm45 ||
                     format == OutputFormat::kPythonic;
  ASSIGN_OR_RETURN(NodeId root, named ? NamedParameterCalls(g, format, tools, vocab, o)
                                      : JsonArgumentCalls(g, format, tools, vocab, o));
  const RuleId rule = g.AddRule("tool_calls");
  g.SetBody(rule, root);
  return rule;
}


}  // namespace llmhost
