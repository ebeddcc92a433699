#include "server/choice_output.h"

namespace llmhost::server {

using Kind = OutputEvent::Kind;

ChoiceOutput::ChoiceOutput(const OutputPlan& plan) : parallel_(plan.parallel) {
  if (plan.enabled) parser_.emplace(plan.format, plan.options);
}

std::vector<OutputEvent> ChoiceOutput::Feed(const std::string& text) {
  if (!parser_) {
    if (text.empty()) return {};
    OutputEvent e;
    e.text = text;
    return {std::move(e)};
  }
  return Number(parser_->Feed(text));
}

std::vector<OutputEvent> ChoiceOutput::Finish() {
  if (!parser_) return {};
  return Number(parser_->Finish());
}

// The parser numbers calls by the calls completed before them, so a discarded
// call's index is used again by the next; the API never reuses one.
std::vector<OutputEvent> ChoiceOutput::Number(std::vector<OutputEvent> events) {
  std::vector<OutputEvent> out;
  out.reserve(events.size());
  for (OutputEvent& e : events) {
    if (e.kind == Kind::kContent || e.kind == Kind::kReasoning) {
      out.push_back(std::move(e));
      continue;
    }
    if (e.kind == Kind::kToolCallStart) {
      const bool drop = !parallel_ && announced_ > 0;
      dropped_[e.index] = drop;
      if (drop) continue;
      api_index_[e.index] = announced_++;
    }
    if (dropped_[e.index]) {
      if (e.kind == Kind::kToolCallEnd || e.kind == Kind::kToolCallDiscarded) dropped_.erase(e.index);
      continue;
    }
    auto it = api_index_.find(e.index);
    if (it == api_index_.end()) continue;  // not announced: nothing to say
    const size_t parser_index = e.index;
    e.index = it->second;
    if (e.kind == Kind::kToolCallEnd || e.kind == Kind::kToolCallDiscarded) {
      api_index_.erase(it);
      dropped_.erase(parser_index);
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace llmhost::server
