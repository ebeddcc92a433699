#include "server/output_constraint.h"

#include <string>
#include <utility>

#include "chat/tool_call_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/regex.h"

namespace llmhost::server {

namespace {

using grammar::Grammar;
using grammar::RuleId;
using grammar::TokenVocab;
using Kind = ConstraintSpec::Kind;

constexpr int kLeadingWhitespace = 4;  // after a think block's close

bool ForcesToolCall(const InferenceRequest& r, const OutputPlan& plan) {
  return plan.enabled && r.tool_choice.mode == ToolChoice::kRequired && r.tools.is_array() && !r.tools.empty();
}

// The spec's grammar, and the text that keys it in the cache.
std::pair<std::string, grammar::GrammarCache::Builder> SpecBuilder(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case Kind::kJsonObject:
      return {"json_object", [](Grammar& g, const TokenVocab&) -> Result<RuleId> { return grammar::AddAnyJsonObject(g); }};
    case Kind::kJsonSchema: {
      std::string text = spec.schema.dump();
      return {std::string(spec.strict ? "json_schema strict\n" : "json_schema\n") + text,
              [text, strict = spec.strict](Grammar& g, const TokenVocab&) -> Result<RuleId> {
                grammar::JsonSchemaOptions o;
                o.default_additional_properties = !strict;
                return grammar::AddJsonSchema(g, nlohmann::ordered_json::parse(text), o);
              }};
    }
    case Kind::kRegex:
      return {"regex\n" + spec.text, [text = spec.text](Grammar& g, const TokenVocab&) -> Result<RuleId> {
                ASSIGN_OR_RETURN(grammar::NodeId node, grammar::AddRegex(g, text));
                const RuleId rule = g.AddRule("regex");
                g.SetBody(rule, node);
                return rule;
              }};
    case Kind::kChoice:
      return {"choice\n" + nlohmann::json(spec.choices).dump(),
              [choices = spec.choices](Grammar& g, const TokenVocab&) -> Result<RuleId> {
                std::vector<grammar::NodeId> alts;
                for (const std::string& c : choices) alts.push_back(g.Literal(c));
                const RuleId rule = g.AddRule("choice");
                g.SetBody(rule, g.Alt(std::move(alts)));
                return rule;
              }};
    case Kind::kGrammar:
      return {"gbnf\n" + spec.text, [text = spec.text](Grammar& g, const TokenVocab& v) -> Result<RuleId> {
                return grammar::AddGbnf(g, text, &v);
              }};
    case Kind::kNone: break;
  }
  return {};
}

// Where the constraint starts when the request reasons first (see the header).
std::optional<OutputConstraint::Think> ThinkOf(const OutputPlan& plan, const grammar::TokenVocab& vocab) {
  if (!plan.enabled || !plan.options.reasoning) return std::nullopt;
  OutputConstraint::Think t;
  if (plan.format == OutputFormat::kHarmony) {
    t.starts_open = true;
    t.close = "<|channel|>final<|message|>";
    return t;
  }
  const FormatMarkers markers = OutputFormatMarkers(plan.format);
  t.starts_open = plan.options.starts_in_reasoning;
  t.close = markers.think_close;
  t.open = markers.think_open;
  t.open_id = vocab.SpecialId(markers.think_open);  // a marker without bytes in the vocabulary
  return t;
}

}  // namespace

MaybeError AttachOutputConstraint(const InferenceRequest& r, const ServedModel& model, const OutputPlan& plan,
                                  GenerationRequest* gen) {
  std::string key, field;
  grammar::GrammarCache::Builder build;
  if (ForcesToolCall(r, plan)) {
    field = "tool_choice";
    if (plan.format == OutputFormat::kNone) {
      return BadRequest("forcing a tool call needs the model's tool-call markup, and '" + model.entry.id +
                            "' has none (its chat template renders no tool calls; the tool_parser model setting "
                            "can name one): send tool_choice \"auto\" or \"none\"",
                        field);
    }
    if (!HasToolCallGrammar(plan.format)) {
      return BadRequest(std::string("forcing a tool call is not supported for the '") + OutputFormatName(plan.format) +
                            "' tool-call format (of '" + model.entry.id + "') yet: send tool_choice \"auto\" or \"none\"",
                        field);
    }
    ToolCallGrammarOptions o;
    o.parallel = r.tool_choice.parallel;
    o.analysis_first = plan.format == OutputFormat::kHarmony && plan.options.reasoning;
    key = std::string("tool_calls ") + OutputFormatName(plan.format) + (o.parallel ? " parallel" : "") +
          (o.analysis_first ? " analysis\n" : "\n") + r.tools.dump();
    build = [tools = r.tools, format = plan.format, o](Grammar& g, const TokenVocab& v) {
      return AddToolCallGrammar(g, format, tools, v, o);
    };
  } else if (r.constraint.kind != Kind::kNone) {
    field = r.constraint.field;
    std::tie(key, build) = SpecBuilder(r.constraint);
  } else {
    return std::nullopt;
  }
  if (!model.grammars) return ErrorWithStatus(500, "structured output: the model has no grammar cache");
  // Harmony's analysis message before a forced call is in the call's grammar.
  std::optional<OutputConstraint::Think> think;
  if (field != "tool_choice" || plan.format != OutputFormat::kHarmony) think = ThinkOf(plan, *model.grammars->vocab());
  if (think) {
    key = "after think\n" + key;
    build = [inner = std::move(build)](Grammar& g, const TokenVocab& v) -> Result<RuleId> {
      ASSIGN_OR_RETURN(RuleId body, inner(g, v));
      const grammar::NodeId ws = g.Repeat(g.Bytes({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}), 0,
                                          kLeadingWhitespace);
      const RuleId rule = g.AddRule("after_think");
      g.SetBody(rule, g.Seq({ws, g.Ref(body)}));
      return rule;
    };
  }
  Result<std::shared_ptr<const grammar::CompiledGrammar>> compiled = model.grammars->Get(key, build);
  if (!compiled.ok()) return BadRequest("'" + field + "': " + compiled.status().message(), field);
  OutputConstraint c;
  c.grammar = std::move(*compiled);
  c.vocab = model.grammars->vocab();
  c.think = std::move(think);
  gen->constraint = std::move(c);
  return std::nullopt;
}

}  // namespace llmhost::server
