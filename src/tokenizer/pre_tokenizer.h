// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): split normalized text
// into pieces ("words") that the model encodes one by one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_util.h"
#include "tokenizer/pattern.h"

namespace llmhost::tok {

struct Piece {
  std::string text;
  // True when the piece starts at offset 0 of the original input (Metaspace's
  // prepend_scheme "first" only prepends there).
  bool at_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces *pieces by their splits; empty pieces are dropped.
  virtual void PreTokenize(std::vector<Piece>* pieces) const = 0;
};

// How a split keeps the delimiters (HF SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Result<SplitBehavior> ParseSplitBehavior(const std::string& name, const std::string& ctx);

// The kept ranges of a text of `len` bytes whose delimiter matches are
// `matches` (sorted, non-overlapping); `invert` swaps matches and gaps.
std::vector<Range> SplitRanges(const std::vector<Range>& matches, size_t len,
                               SplitBehavior behavior, bool invert = false);

Result<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const Json& j, const std::string& ctx,
                                                        int depth = 0);

}  // namespace llmhost::tok
