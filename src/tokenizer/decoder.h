// Decoders of tokenizer.json ("decoder"): token strings -> text. Each step
// maps the list of token strings to a new list (HF decode_chain); the result
// is their concatenation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_util.h"

namespace llmhost::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::vector<std::string> DecodeChain(std::vector<std::string> tokens) const = 0;
  std::string Decode(std::vector<std::string> tokens) const;
};

Result<std::unique_ptr<Decoder>> ParseDecoder(const Json& j, const std::string& ctx, int depth = 0);

}  // namespace llmhost::tok
