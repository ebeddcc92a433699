// `llmhost run` without a server: the model loaded in this process (as
// `generate` loads it), each turn the whole conversation through its chat
// template, generated with model/generate.h, decoded and split into reasoning
// and answer by the same output parser the server uses. No prefix cache: a
// turn prefills the conversation again.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/model_args.h"
#include "cli/turn_printer.h"
#include "tokenizer/tokenizer.h"

namespace llmhost::cli {

struct LocalTurnOptions {
  int64_t max_tokens = 1024;
  double temperature = 0;  // greedy
};

class LocalChat {
 public:
  // `path`: a model folder or .gguf file; `device` as generate's --device.
  static Result<std::unique_ptr<LocalChat>> Load(const std::string& path, const std::string& device);

  // The assistant's answer to `messages` ([{role, content}]), shown through
  // `printer` as it is generated.
  Status Reply(const nlohmann::ordered_json& messages, const LocalTurnOptions& o, TurnPrinter* printer);

 private:
  LoadedModel lm_;
  std::unique_ptr<Tokenizer> tok_;
  std::vector<int32_t> stop_ids_;
};

}  // namespace llmhost::cli
