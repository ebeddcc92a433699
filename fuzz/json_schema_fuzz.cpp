// Fuzzes the JSON Schema compiler: arbitrary bytes read as a JSON document
// (as a request's schema is) and compiled. Must never crash, recurse without
// bound or grow the grammar past its limits; an accepted schema's grammar
// must validate. The same document as a tool's parameters for the formats
// that write each parameter on its own (bare text or JSON).
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
  for (int bare = 0; bare < 2; ++bare) {
    llmhost::grammar::Grammar g;
    llmhost::grammar::NamedParametersOptions o;
    o.stop = "</parameter>";
    o.form = [bare](const nlohmann::ordered_json& p) {
      llmhost::grammar::ParameterForm f;
      f.bare = bare == 1;
      if (!f.bare && p.is_object() && p.contains("type") && p["type"].is_string()) f.json_type = p["type"];
      return f;
    };
    auto params = llmhost::grammar::AddNamedParameters(g, *schema, o);
    if (!params.ok()) continue;
    std::vector<llmhost::grammar::NodeId> values;
    for (const auto& p : *params) values.push_back(p.value);
    const auto root = g.AddRule("parameters");
    g.SetBody(root, g.Seq(std::move(values)));
    g.SetRoot(root);
    if (!g.Validate().ok()) __builtin_trap();
  }
  return 0;
}
