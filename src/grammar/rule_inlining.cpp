#include "grammar/rule_inlining.h"

#include <algorithm>

namespace llmhost::grammar {
namespace {

// Facts about one rule's body, references not followed.
struct BodyFacts {
  std::vector<RuleId> refs;
  bool unbounded = false;  // some repetition without an upper bound
};

BodyFacts ReadBody(const Grammar& g, RuleId rule, std::vector<uint32_t>* seen, uint32_t stamp) {
  BodyFacts facts;
  std::vector<NodeId> todo = {g.rule(rule).body};
  while (!todo.empty()) {
    NodeId id = todo.back();
    todo.pop_back();
    if ((*seen)[id] == stamp) continue;
    (*seen)[id] = stamp;
    const Node& n = g.node(id);
    if (n.kind == Node::Kind::kRef) facts.refs.push_back(n.rule);
    if (n.kind == Node::Kind::kRepeat && n.max == -1) facts.unbounded = true;
    for (NodeId c : n.children) todo.push_back(c);
  }
  std::sort(facts.refs.begin(), facts.refs.end());
  facts.refs.erase(std::unique(facts.refs.begin(), facts.refs.end()), facts.refs.end());
  return facts;
}

// Rules on a cycle of references (Tarjan's algorithm, iteratively).
std::vector<uint8_t> RecursiveRules(const std::vector<BodyFacts>& facts) {
  size_t n = facts.size();
  std::vector<int32_t> index(n, -1), low(n, 0);
  std::vector<uint8_t> on_stack(n, 0), recursive(n, 0);
  std::vector<int32_t> stack;
  int32_t next_index = 0;
  struct Frame { int32_t rule; size_t edge; };
  for (size_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    std::vector<Frame> dfs = {{static_cast<int32_t>(root), 0}};
    index[root] = low[root] = next_index++;
    stack.push_back(static_cast<int32_t>(root));
    on_stack[root] = 1;
    while (!dfs.empty()) {
      Frame& f = dfs.back();
      const std::vector<RuleId>& refs = facts[f.rule].refs;
      if (f.edge < refs.size()) {
        int32_t to = refs[f.edge++];
        if (to == f.rule) recursive[to] = 1;
        if (index[to] < 0) {
          index[to] = low[to] = next_index++;
          stack.push_back(to);
          on_stack[to] = 1;
          dfs.push_back({to, 0});
        } else if (on_stack[to]) {
          low[f.rule] = std::min(low[f.rule], index[to]);
        }
        continue;
      }
      int32_t r = f.rule;
      dfs.pop_back();
      if (!dfs.empty()) low[dfs.back().rule] = std::min(low[dfs.back().rule], low[r]);
      if (low[r] != index[r]) continue;
      // r is the root of a strongly connected component.
      size_t begin = stack.size();
      while (stack[begin - 1] != r) --begin;
      --begin;
      bool cycle = stack.size() - begin > 1;
      for (size_t k = begin; k < stack.size(); ++k) {
        on_stack[stack[k]] = 0;
        if (cycle) recursive[stack[k]] = 1;
      }
      stack.resize(begin);
    }
  }
  return recursive;
}

// Estimated automaton states of a node once expanded (saturating at limit + 1).
int64_t Size(const Grammar& g, NodeId id, const std::vector<int64_t>& rule_size, int depth) {
  constexpr int64_t kCap = kInlineLimit + 1;
  if (depth > 64) return kCap;
  const Node& n = g.node(id);
  switch (n.kind) {
    case Node::Kind::kEmpty:
      return 0;
    case Node::Kind::kBytes:
    case Node::Kind::kToken:
      return 1;
    case Node::Kind::kRef:
      return rule_size[n.rule] > 0 ? rule_size[n.rule] : 1;
    case Node::Kind::kRepeat: {
      int64_t child = Size(g, n.children[0], rule_size, depth + 1);
      int64_t copies = n.max == -1 ? std::max(n.min, 1) : n.max;
      return std::min<int64_t>(kCap, child * copies + 1);
    }
    default: {
      int64_t total = 1;
      for (NodeId c : n.children) {
        total += Size(g, c, rule_size, depth + 1);
        if (total >= kCap) return kCap;  // also bounds the work on shared subtrees
      }
      return total;
    }
  }
}

}  // namespace

std::vector<uint8_t> ChooseInlinedRules(const Grammar& g) {
  size_t n = g.rule_count();
  std::vector<uint32_t> seen(g.node_count(), 0);
  std::vector<BodyFacts> facts(n);
  for (size_t r = 0; r < n; ++r) facts[r] = ReadBody(g, static_cast<RuleId>(r), &seen, static_cast<uint32_t>(r + 1));
  std::vector<uint8_t> recursive = RecursiveRules(facts);
  // rule_size[r] > 0: r is inlined and expands to that many states. Callees
  // first: a rule's size counts the expansions of the rules it inlines.
  std::vector<int64_t> rule_size(n, 0);
  std::vector<uint8_t> done(n, 0), inlined(n, 0);
  for (size_t start = 0; start < n; ++start) {
    std::vector<std::pair<RuleId, size_t>> dfs = {{static_cast<RuleId>(start), 0}};
    while (!dfs.empty()) {
      auto& [r, edge] = dfs.back();
      if (done[r]) {
        dfs.pop_back();
        continue;
      }
      if (!recursive[r] && edge < facts[r].refs.size()) {
        RuleId to = facts[r].refs[edge++];
        if (!done[to]) dfs.push_back({to, 0});
        continue;
      }
      done[r] = 1;
      if (!recursive[r] && !facts[r].unbounded && r != g.root()) {
        int64_t size = Size(g, g.rule(r).body, rule_size, 0);
        if (size <= kInlineLimit) {
          inlined[r] = 1;
          rule_size[r] = std::max<int64_t>(size, 1);
        }
      }
      dfs.pop_back();
    }
  }
  return inlined;
}

}  // namespace llmhost::grammar
