#include "grammar/regex.h"

#include "grammar/regex_compiler.h"

namespace llmhost::grammar {

Result<NodeId> AddRegex(Grammar& grammar, std::string_view pattern, const RegexOptions& options) {
  return CompileRegex(grammar, pattern, options.search, RegexText::kUtf8);
}

}  // namespace llmhost::grammar
