// Post-processors of tokenizer.json ("post_processor"): add the special
// tokens around an encoded sequence (or pair) when add_special is requested.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_util.h"
#include "tokenizer/tokenizer.h"

namespace llmhost::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Combines `a` (and `b` when not null) into the final ids.
  virtual std::vector<TokenId> Process(const std::vector<TokenId>& a,
                                       const std::vector<TokenId>* b) const = 0;
  // The special ids it adds for a single sequence, before / after it.
  virtual void SingleSpecials(std::vector<TokenId>* before, std::vector<TokenId>* after) const = 0;
  // True when it adds no ids (ByteLevel: it only trims offsets).
  virtual bool IsIdentity() const { return false; }
};

Result<std::unique_ptr<PostProcessor>> ParsePostProcessor(const Json& j, const std::string& ctx,
                                                          int depth = 0);

}  // namespace llmhost::tok
