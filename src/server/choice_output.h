// ChoiceOutput: one choice's decoded text → output events for the API
// formatters (chat/output_parser.h), per the request's OutputPlan.
//
// Without a plan (the completions API) text passes through as content.
// Tool calls are numbered for the API in the order they are announced;
// without parallel calls only the first is kept (later ones are dropped,
// markup and all). Runs on the connection's transport thread (the relay's
// OnEvent); not thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chat/output_parser.h"
#include "server/output_plan.h"

namespace llmhost::server {

class ChoiceOutput {
 public:
  explicit ChoiceOutput(const OutputPlan& plan);
  std::vector<OutputEvent> Feed(const std::string& text);
  // The end of the output: held-back text, unterminated markup as content.
  std::vector<OutputEvent> Finish();

 private:
  std::vector<OutputEvent> Number(std::vector<OutputEvent> events);

  std::optional<OutputParser> parser_;
  bool parallel_ = true;
  std::map<size_t, size_t> api_index_;  // the parser's index of an open call → the API's
  std::map<size_t, bool> dropped_;      // open calls left out (parallel calls off)
  size_t announced_ = 0;                // calls numbered so far
};

}  // namespace llmhost::server
