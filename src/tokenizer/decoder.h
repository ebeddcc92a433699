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
  // The bytes one token adds inside a longer text (not as its first token):
  // the chain applied to that token alone, except that steps acting on the
  // ends of the whole text (Strip, once an earlier step has joined the
  // tokens: *joined) leave it as is, and byte-level or byte-fallback bytes
  // stay raw (part of a UTF-8 character is not replaced).
  virtual std::string TokenBytes(std::string token, bool* joined) const = 0;
  std::string Decode(std::vector<std::string> tokens) const;
};

Result<std::unique_ptr<Decoder>> ParseDecoder(const Json& j, const std::string& ctx, int depth = 0);

}  // namespace llmhost::tok
