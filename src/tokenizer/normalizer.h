// Normalizers of tokenizer.json ("normalizer"): text -> text transforms run on
// each segment between added tokens before pre-tokenization. Offsets are not
// tracked: llmhost only needs ids.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/json_util.h"

namespace llmhost::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `s` is valid UTF-8; so is the result.
  virtual std::string Normalize(std::string_view s) const = 0;
};

// Parses one normalizer object (Sequence nests; `depth` bounds the nesting).
Result<std::unique_ptr<Normalizer>> ParseNormalizer(const Json& j, const std::string& ctx,
                                                    int depth = 0);

}  // namespace llmhost::tok
