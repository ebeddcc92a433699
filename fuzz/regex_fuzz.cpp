// Fuzzes the regex compiler: arbitrary bytes as a pattern, compiled as a
// whole-text regex, in search mode, and as a JSON string's content. Must
// never crash, recurse without bound or build a grammar past its limits.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grammar/regex.h"
#include "grammar/regex_compiler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view pattern(reinterpret_cast<const char*>(data), size);
  using llmhost::grammar::Grammar;
  for (int mode = 0; mode < 3; ++mode) {
    Grammar g;
    auto node = mode == 2 ? llmhost::grammar::CompileRegex(g, pattern, true, llmhost::grammar::RegexText::kJsonString)
                          : llmhost::grammar::AddRegex(g, pattern, {.search = mode == 1});
    if (!node.ok()) continue;
    auto rule = g.AddRule("root");
    g.SetBody(rule, *node);
    g.SetRoot(rule);
    if (!g.Validate().ok() && g.node_count() < llmhost::grammar::kMaxNodes) __builtin_trap();
  }
  return 0;
}
