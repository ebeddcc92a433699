// Fuzzes the JSON Schema compiler: arbitrary bytes read as a JSON document
// (as a request's schema is) and compiled. Must never crash, recurse without
// bound or grow the grammar past its limits; an accepted schema's grammar
// must validate.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grammar/json_schema.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto schema = llmhost::ParseOrderedJson(text, "schema", 1 << 16);
  if (!schema.ok()) return 0;
  for (int strict = 0; strict < 2; ++strict) {
    llmhost::grammar::Grammar g;
    auto rule = llmhost::grammar::AddJsonSchema(g, *schema,
                                                {.max_whitespace = 2, .default_additional_properties = strict == 0});
    if (!rule.ok()) continue;
    g.SetRoot(*rule);
    if (!g.Validate().ok()) __builtin_trap();
  }
  return 0;
}
