// A request's output constraint, compiled for the model that serves it:
// a forced tool call (tool_choice required / a named function / Anthropic
// any / tool: the call in the model's markup, chat/tool_call_grammar.h) or
// the structured output the request asked for (ConstraintSpec: JSON
// object, JSON Schema, regex, choice, GBNF), through the model's grammar
// cache (ServedModel::grammars).
//
// Where the request's reasoning is on (OutputPlan: the template has a think
// block and the request did not turn it off), the think block stays free
// and the constraint starts after its close, with up to 4 bytes of
// whitespace first (templates write "</think>\n\n"): the prompt opened the
// block (free until the close), or the output may open it first (while
// what it wrote is a start of both the open marker and the grammar, both
// stay possible), else it is constrained from its start. gpt-oss (harmony)
// is free until its final channel's message; a forced call's grammar holds
// the analysis message itself (the call follows it in another message).
//
// A forced tool call takes precedence over response_format (the turn's
// output is the call, not a text answer).
#pragma once

#include "engine/request.h"
#include "pool/loaded_engine.h"
#include "server/api_error.h"
#include "server/api_request.h"
#include "server/output_plan.h"

namespace llmhost::server {

// Sets gen->constraint, or answers 400 with what the compiler said (and where:
// the request field, the path in the schema, the offset in the regex).
MaybeError AttachOutputConstraint(const InferenceRequest& request, const ServedModel& model, const OutputPlan& plan,
                                  GenerationRequest* gen);

}  // namespace llmhost::server
