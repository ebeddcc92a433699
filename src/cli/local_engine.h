// A model's Engine in this process, for `llmhost bench` without a server:
// the model loaded as `generate` and `run` load it, its tokenizer, and an
// Engine with the prefix cache (so that the cached-prefix step measures
// what a server's would), K/V in the model's own 16-bit type (serve's
// --kv-dtype auto).
#pragma once

#include <memory>
#include <string>

#include "cli/model_args.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace llmhost::cli {

class LocalEngine {
 public:
  // `path`: a model folder or .gguf file; `device` as generate's --device;
  // `max_streams`: requests that may run at once.
  static Result<std::unique_ptr<LocalEngine>> Load(const std::string& path, const std::string& device,
                                                   int max_streams);
  ~LocalEngine();

  Engine* engine() { return engine_.get(); }
  const Tokenizer* tokenizer() const { return tok_.get(); }

 private:
  LoadedModel lm_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<Engine> engine_;  // stopped first: it computes with lm_ and tok_
};

}  // namespace llmhost::cli
