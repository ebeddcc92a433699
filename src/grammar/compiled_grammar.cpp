#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <optional>

#include "grammar/mask_cache.h"
#include "grammar/rule_automaton.h"
#include "grammar/rule_inlining.h"

namespace llmhost::grammar {
namespace {

constexpr size_t kMaxTotalStates = 1 << 20;

// The rules the root reaches through calls, each as its DFA.
struct RuleSet {
  std::vector<RuleId> rules;       // [k] the grammar's rule
  std::vector<int32_t> index;      // [grammar rule] -> k, or -1
  std::vector<RuleDfa> dfas;       // [k]
};

Result<RuleSet> BuildRules(const Grammar& g, const std::vector<uint8_t>& inlined, size_t vocab_size) {
  RuleSet set;
  set.index.assign(g.rule_count(), -1);
  set.rules.push_back(g.root());
  set.index[g.root()] = 0;
  size_t total = 0;
  for (size_t k = 0; k < set.rules.size(); ++k) {
    ASSIGN_OR_RETURN(RuleDfa dfa, BuildRuleDfa(g, set.rules[k], inlined));
    total += dfa.states.size();
    if (total > kMaxTotalStates)
      return Status::InvalidArgument("grammar: more than " + std::to_string(kMaxTotalStates) +
                                     " automaton states in all");
    for (const RuleDfa::State& st : dfa.states) {
      for (auto [token, next] : st.tokens)
        if (static_cast<size_t>(token) >= vocab_size)
          return Status::InvalidArgument("grammar: rule '" + g.rule(set.rules[k]).name + "' uses token id " +
                                         std::to_string(token) + ", which is not in the vocabulary");
      for (auto [callee, next] : st.calls) {
        if (set.index[callee] >= 0) continue;
        set.index[callee] = static_cast<int32_t>(set.rules.size());
        set.rules.push_back(callee);
      }
    }
    set.dfas.push_back(std::move(dfa));
  }
  return set;
}

// [k][state]: the state can reach acceptance (through rules that can).
std::vector<std::vector<uint8_t>> Productive(const RuleSet& set) {
  size_t n = set.dfas.size();
  std::vector<std::vector<uint8_t>> prod(n);
  for (size_t k = 0; k < n; ++k) prod[k].assign(set.dfas[k].states.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < n; ++k) {
      const auto& states = set.dfas[k].states;
      for (size_t s = states.size(); s-- > 0;) {
        if (prod[k][s]) continue;
        const RuleDfa::State& st = states[s];
        bool p = st.accepting;
        for (int32_t next : st.byte_next) p = p || (next >= 0 && prod[k][next]);
        for (auto [token, next] : st.tokens) p = p || prod[k][next];
        for (auto [callee, next] : st.calls) p = p || (prod[set.index[callee]][0] && prod[k][next]);
        if (p) {
          prod[k][s] = 1;
          changed = true;
        }
      }
    }
  }
  return prod;
}

}  // namespace

CompiledGrammar::~CompiledGrammar() = default;

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::Build(const Grammar& source,
                                                                      std::shared_ptr<const TokenVocab> vocab,
                                                                      const CompileOptions& options,
                                                                      const RepeatLimits& repeats) {
  RETURN_IF_ERROR(source.Validate());
  if (!vocab) return Status::InvalidArgument("grammar: no vocabulary");
  std::vector<uint8_t> inlined = ChooseInlinedRules(source);
  std::optional<Grammar> lowered = LowerLongRepeats(source, &inlined, repeats);
  if (lowered) RETURN_IF_ERROR(lowered->Validate());
  const Grammar& g = lowered ? *lowered : source;
  ASSIGN_OR_RETURN(RuleSet set, BuildRules(g, inlined, vocab->size()));
  std::vector<std::vector<uint8_t>> prod = Productive(set);
  // Callees after callers: the last rule that cannot match is the culprit.
  for (size_t k = set.rules.size(); k-- > 0;)
    if (!prod[k][0]) return Status::InvalidArgument("grammar: rule '" + g.rule(set.rules[k]).name + "' can never match");

  // Keep the productive states reachable from each start; renumber globally.
  std::shared_ptr<CompiledGrammar> cg(new CompiledGrammar());
  cg->vocab_ = std::move(vocab);
  cg->options_ = options;
  size_t n = set.rules.size();
  std::vector<std::vector<int32_t>> global(n);  // [k][state] -> global id, -1: dropped
  std::vector<std::vector<int32_t>> order(n);   // [k] kept states in order
  int32_t next_id = 0;
  for (size_t k = 0; k < n; ++k) {
    const auto& states = set.dfas[k].states;
    global[k].assign(states.size(), -1);
    std::vector<int32_t> todo = {0};
    global[k][0] = -2;  // queued
    while (!todo.empty()) {
      int32_t s = todo.back();
      todo.pop_back();
      order[k].push_back(s);
      auto visit = [&](int32_t t) {
        if (t >= 0 && prod[k][t] && global[k][t] == -1) {
          global[k][t] = -2;
          todo.push_back(t);
        }
      };
      for (int32_t t : states[s].byte_next) visit(t);
      for (auto [token, t] : states[s].tokens) visit(t);
      for (auto [callee, t] : states[s].calls) visit(t);
    }
    std::sort(order[k].begin(), order[k].end());  // the start stays first
    for (int32_t s : order[k]) global[k][s] = next_id++;
  }
  for (size_t k = 0; k < n; ++k) {
    const RuleDfa& dfa = set.dfas[k];
    cg->byte_class_.insert(cg->byte_class_.end(), dfa.byte_class.begin(), dfa.byte_class.end());
    for (int32_t s : order[k]) {
      const RuleDfa::State& st = dfa.states[s];
      State out;
      out.rule = static_cast<int32_t>(k);
      out.accepting = st.accepting;
      std::vector<int32_t> row(dfa.num_classes, -1);
      bool any = false;
      for (size_t c = 0; c < st.byte_next.size(); ++c) {
        int32_t t = st.byte_next[c];
        if (t >= 0 && global[k][t] >= 0) {
          row[c] = global[k][t];
          any = true;
        }
      }
      std::array<uint64_t, 4> bytes{};
      if (any) {
        out.byte_row = static_cast<int32_t>(cg->byte_next_.size());
        cg->byte_next_.insert(cg->byte_next_.end(), row.begin(), row.end());
        for (int b = 0; b < 256; ++b)
          if (row[dfa.byte_class[b]] >= 0) bytes[b >> 6] |= uint64_t{1} << (b & 63);
      }
      cg->byte_sets_.push_back(bytes);
      out.token_begin = static_cast<int32_t>(cg->token_edges_.size());
      for (auto [token, t] : st.tokens)
        if (global[k][t] >= 0) cg->token_edges_.push_back({token, global[k][t]});
      out.token_end = static_cast<int32_t>(cg->token_edges_.size());
      out.call_begin = static_cast<int32_t>(cg->call_edges_.size());
      for (auto [callee, t] : st.calls)
        if (global[k][t] >= 0) cg->call_edges_.push_back({global[set.index[callee]][0], global[k][t]});
      out.call_end = static_cast<int32_t>(cg->call_edges_.size());
      cg->plain_.push_back(!out.accepting && out.call_begin == out.call_end);
      cg->states_.push_back(out);
    }
  }
  cg->rule_names_.reserve(n);
  for (RuleId r : set.rules) cg->rule_names_.push_back(g.rule(r).name);
  RETURN_IF_ERROR(cg->CheckLeftRecursion());
  cg->cache_ = std::make_unique<MaskCache>(cg->states_.size(), *cg->vocab_);
  return std::shared_ptr<const CompiledGrammar>(std::move(cg));
}

Status CompiledGrammar::CheckLeftRecursion() const {
  size_t n = states_.size();
  // nullable[s]: s reaches acceptance through calls of nullable rules alone.
  std::vector<uint8_t> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = n; s-- > 0;) {
      if (nullable[s]) continue;
      bool v = states_[s].accepting;
      for (const CallEdge& e : call_edges(static_cast<int32_t>(s))) v = v || (nullable[e.callee_start] && nullable[e.next]);
      if (v) {
        nullable[s] = 1;
        changed = true;
      }
    }
  }
  // Rule k calls rule j before consuming anything: an edge k -> j.
  size_t rules = rule_names_.size();
  std::vector<int32_t> rule_start(rules, -1);
  for (size_t s = 0; s < n; ++s)
    if (rule_start[states_[s].rule] < 0) rule_start[states_[s].rule] = static_cast<int32_t>(s);
  std::vector<std::vector<int32_t>> left(rules);
  std::vector<uint8_t> seen(n, 0);
  for (size_t k = 0; k < rules; ++k) {
    std::vector<int32_t> todo = {rule_start[k]}, visited;
    seen[rule_start[k]] = 1;
    while (!todo.empty()) {
      int32_t s = todo.back();
      todo.pop_back();
      visited.push_back(s);
      for (const CallEdge& e : call_edges(s)) {
        left[k].push_back(states_[e.callee_start].rule);
        if (nullable[e.callee_start] && !seen[e.next]) {
          seen[e.next] = 1;
          todo.push_back(e.next);
        }
      }
    }
    for (int32_t s : visited) seen[s] = 0;
  }
  // A cycle of such edges is left recursion (iterative DFS, three colours).
  std::vector<uint8_t> color(rules, 0);
  for (size_t root = 0; root < rules; ++root) {
    if (color[root]) continue;
    std::vector<std::pair<int32_t, size_t>> dfs = {{static_cast<int32_t>(root), 0}};
    color[root] = 1;
    while (!dfs.empty()) {
      auto& [k, edge] = dfs.back();
      if (edge == left[k].size()) {
        color[k] = 2;
        dfs.pop_back();
        continue;
      }
      int32_t j = left[k][edge++];
      if (color[j] == 1)
        return Status::InvalidArgument("grammar: rule '" + rule_names_[j] +
                                       "' is left-recursive (it can reach itself before matching a byte)");
      if (color[j] == 0) {
        color[j] = 1;
        dfs.push_back({j, 0});
      }
    }
  }
  return Status::OK();
}

Result<std::shared_ptr<const CompiledGrammar>> Compile(const Grammar& grammar,
                                                       std::shared_ptr<const TokenVocab> vocab,
                                                       const CompileOptions& options) {
  return CompiledGrammar::Build(grammar, std::move(vocab), options);
}

}  // namespace llmhost::grammar
