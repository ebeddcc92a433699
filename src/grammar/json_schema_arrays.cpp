// array schemas: prefixItems, items, minItems / maxItems.
#include "grammar/json_schema_compiler.h"

namespace llmhost::grammar {

// "[" ws (item ws ("," ws item ws)*)? "]", where the i-th item follows
// prefixItems[i] and later ones `items`; the count within min..max.
Result<NodeId> SchemaCompiler::Array(const Json& schema, const std::string& path, int depth) {
  uint64_t min = schema.contains("minItems") ? schema["minItems"].get<uint64_t>() : 0;
  int64_t max = MaxCount(schema, "maxItems");
  std::vector<NodeId> prefix;
  if (schema.contains("prefixItems")) {
    const Json& items = schema["prefixItems"];
    for (size_t i = 0; i < items.size(); ++i) {
      if (max >= 0 && i >= static_cast<uint64_t>(max)) break;
      if (items[i] == Json(false)) break;  // no array reaches this position
      ASSIGN_OR_RETURN(NodeId item,
                       Value(items[i], ChildPath(ChildPath(path, "prefixItems"), std::to_string(i)), depth + 1));
      prefix.push_back(item);
    }
  }
  bool prefix_cut = schema.contains("prefixItems") && prefix.size() < schema["prefixItems"].size();
  std::optional<NodeId> rest;
  const Json items = schema.contains("items") ? schema["items"] : Json(true);
  if (!prefix_cut && items != Json(false)) {
    ASSIGN_OR_RETURN(NodeId item, Value(items, ChildPath(path, "items"), depth + 1));
    // A rule, so that a bounded count repeats a call (or, while the item is
    // small, its inlined copy) rather than maxItems copies of a large item.
    RuleId rule = g_.AddRule(ChildPath(path, "items"));
    g_.SetBody(rule, item);
    rest = g_.Ref(rule);
  }
  uint64_t reachable = prefix.size();
  if (min > reachable && !rest) return BadSchema(path, "'minItems' cannot be met");
  if (max >= 0 && min > static_cast<uint64_t>(max)) return BadSchema(path, "'minItems' above 'maxItems'");
  NodeId ws = Ws();
  NodeId comma = g_.Seq({g_.Byte(','), ws});
  // After i items, the rest: built from the last prefix item backwards.
  NodeId tail;
  size_t k = prefix.size();
  if (rest) {
    uint64_t more_min = min > k ? min - k : 0;
    int64_t more_max = max < 0 ? -1 : max - static_cast<int64_t>(k);
    ASSIGN_OR_RETURN(tail, RepeatCount(g_.Seq({comma, *rest, ws}), more_min, more_max, path));
  } else {
    tail = g_.Empty();
  }
  for (size_t i = k; i-- > 1;) {  // tail after i items, i >= 1
    NodeId next = g_.Seq({comma, prefix[i], ws, tail});
    tail = i >= min ? g_.Alt({g_.Empty(), next}) : next;
  }
  std::optional<NodeId> body;
  if (k > 0) {
    body = g_.Seq({prefix[0], ws, tail});
  } else if (rest) {
    uint64_t more_min = min > 1 ? min - 1 : 0;
    int64_t more_max = max < 0 ? -1 : max - 1;
    if (max != 0) {
      ASSIGN_OR_RETURN(NodeId more, RepeatCount(g_.Seq({comma, *rest, ws}), more_min, more_max, path));
      body = g_.Seq({*rest, ws, more});
    }
  }
  std::vector<NodeId> alts;
  if (min == 0) alts.push_back(g_.Empty());
  if (body) alts.push_back(*body);
  return g_.Seq({g_.Byte('['), ws, g_.Alt(std::move(alts)), g_.Byte(']')});
}

}  // namespace llmhost::grammar
