#include "grammar/rule_automaton.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace llmhost::grammar {
namespace {

struct NfaEdge {
  enum class Kind : uint8_t { kEps, kBytes, kToken, kCall };
  Kind kind;
  int32_t label;  // kBytes: the node whose ranges; kToken: id; kCall: rule
  int32_t to;
};

class NfaBuilder {
 public:
  NfaBuilder(const Grammar& g, const std::vector<uint8_t>& inlined) : g_(g), inlined_(inlined) {}

  Status Build(RuleId rule) {
    rule_name_ = g_.rule(rule).name;
    start_ = NewState();
    ASSIGN_OR_RETURN(int32_t exit, Fragment(g_.rule(rule).body, start_, 0));
    final_ = exit;
    return Status::OK();
  }

  std::vector<std::vector<NfaEdge>> edges;  // [state]
  int32_t start_ = 0, final_ = 0;

 private:
  int32_t NewState() {
    edges.emplace_back();
    return static_cast<int32_t>(edges.size() - 1);
  }
  void Edge(int32_t from, NfaEdge::Kind kind, int32_t label, int32_t to) { edges[from].push_back({kind, label, to}); }

  Status TooLarge() const {
    return Status::InvalidArgument("grammar: rule '" + rule_name_ + "' expands to more than " +
                                   std::to_string(kMaxNfaStates) + " automaton states");
  }

  // Adds the automaton of `id` entered at `entry`; returns its exit state.
  Result<int32_t> Fragment(NodeId id, int32_t entry, int depth) {
    if (depth > kMaxNodeDepth)
      return Status::InvalidArgument("grammar: rule '" + rule_name_ + "' is nested more than " +
                                     std::to_string(kMaxNodeDepth) + " levels deep");
    if (edges.size() > static_cast<size_t>(kMaxNfaStates)) return TooLarge();
    const Node& n = g_.node(id);
    switch (n.kind) {
      case Node::Kind::kEmpty:
        return entry;
      case Node::Kind::kBytes:
      case Node::Kind::kToken: {
        int32_t s = NewState();
        if (n.kind == Node::Kind::kBytes) Edge(entry, NfaEdge::Kind::kBytes, id, s);
        else Edge(entry, NfaEdge::Kind::kToken, n.token, s);
        return s;
      }
      case Node::Kind::kSeq: {
        int32_t cur = entry;
        for (NodeId c : n.children) {
          ASSIGN_OR_RETURN(cur, Fragment(c, cur, depth + 1));
        }
        return cur;
      }
      case Node::Kind::kAlt: {
        int32_t out = NewState();
        for (NodeId c : n.children) {
          ASSIGN_OR_RETURN(int32_t e, Fragment(c, entry, depth + 1));
          Edge(e, NfaEdge::Kind::kEps, 0, out);
        }
        return out;
      }
      case Node::Kind::kRepeat:
        return Repeat(n, entry, depth);
      case Node::Kind::kRef: {
        if (inlined_[n.rule]) return Fragment(g_.rule(n.rule).body, entry, depth + 1);
        int32_t s = NewState();
        Edge(entry, NfaEdge::Kind::kCall, n.rule, s);
        return s;
      }
    }
    return entry;
  }

  Result<int32_t> Repeat(const Node& n, int32_t entry, int depth) {
    NodeId child = n.children[0];
    int32_t cur = entry;
    // A child that adds no state matches only "", and so does the repeat: a
    // count of millions must not loop over nothing.
    auto empty_child = [&](size_t states_before, int32_t from, int32_t to) {
      return edges.size() == states_before && from == to;
    };
    for (int32_t i = 0; i < n.min; ++i) {
      size_t states = edges.size();
      ASSIGN_OR_RETURN(int32_t next, Fragment(child, cur, depth + 1));
      if (empty_child(states, cur, next)) break;
      cur = next;
      if (edges.size() > static_cast<size_t>(kMaxNfaStates)) return TooLarge();
    }
    if (n.max == -1) {
      // A fresh loop state, so that nothing before `cur` is repeated.
      int32_t loop = NewState();
      Edge(cur, NfaEdge::Kind::kEps, 0, loop);
      ASSIGN_OR_RETURN(int32_t body, Fragment(child, loop, depth + 1));
      Edge(body, NfaEdge::Kind::kEps, 0, loop);
      return loop;
    }
    // Nested optionals (c (c (c)?)?)?: every exit leads to one end.
    int32_t end = NewState();
    for (int32_t i = n.min; i < n.max; ++i) {
      Edge(cur, NfaEdge::Kind::kEps, 0, end);
      size_t states = edges.size();
      ASSIGN_OR_RETURN(int32_t next, Fragment(child, cur, depth + 1));
      if (empty_child(states, cur, next)) break;
      cur = next;
      if (edges.size() > static_cast<size_t>(kMaxNfaStates)) return TooLarge();
    }
    Edge(cur, NfaEdge::Kind::kEps, 0, end);
    return end;
  }

  const Grammar& g_;
  const std::vector<uint8_t>& inlined_;
  std::string rule_name_;
};

struct VectorHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
    return h;
  }
};

class SubsetBuilder {
 public:
  SubsetBuilder(const Grammar& g, const NfaBuilder& nfa, RuleId rule)
      : g_(g), nfa_(nfa), rule_(rule), stamp_(nfa.edges.size(), 0) {}

  Result<RuleDfa> Build() {
    ComputeByteClasses();
    Intern(Closure({nfa_.start_}));
    for (size_t i = 0; i < sets_.size(); ++i) {
      RETURN_IF_ERROR(Expand(i));
    }
    return std::move(dfa_);
  }

 private:
  void ComputeByteClasses() {
    std::array<bool, 257> cut{};  // cut[b]: a class starts at byte b
    cut[0] = true;
    for (const auto& out : nfa_.edges)
      for (const NfaEdge& e : out) {
        if (e.kind != NfaEdge::Kind::kBytes) continue;
        for (ByteRange r : g_.node(e.label).ranges) {
          cut[r.lo] = true;
          cut[r.hi + 1] = true;
        }
      }
    int cls = -1;
    for (int b = 0; b < 256; ++b) {
      if (cut[b]) ++cls;
      dfa_.byte_class[b] = static_cast<uint8_t>(cls);
    }
    dfa_.num_classes = cls + 1;
  }

  std::vector<int32_t> Closure(std::vector<int32_t> seeds) {
    ++current_stamp_;
    std::vector<int32_t> out;
    while (!seeds.empty()) {
      int32_t s = seeds.back();
      seeds.pop_back();
      if (stamp_[s] == current_stamp_) continue;
      stamp_[s] = current_stamp_;
      out.push_back(s);
      for (const NfaEdge& e : nfa_.edges[s])
        if (e.kind == NfaEdge::Kind::kEps) seeds.push_back(e.to);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  Result<int32_t> Intern(std::vector<int32_t> set) {
    auto it = index_.find(set);
    if (it != index_.end()) return it->second;
    if (sets_.size() >= static_cast<size_t>(kMaxDfaStates))
      return Status::InvalidArgument("grammar: rule '" + g_.rule(rule_).name + "' needs more than " +
                                     std::to_string(kMaxDfaStates) + " automaton states");
    // Each state keeps its set of NFA states (twice: here and in the index).
    set_states_ += set.size();
    if (set_states_ > kMaxSubsetStates)
      return Status::InvalidArgument("grammar: rule '" + g_.rule(rule_).name +
                                     "' needs too large an automaton (its states hold more than " +
                                     std::to_string(kMaxSubsetStates) + " NFA states in all)");
    int32_t id = static_cast<int32_t>(sets_.size());
    index_.emplace(set, id);
    RuleDfa::State st;
    st.accepting = std::binary_search(set.begin(), set.end(), nfa_.final_);
    dfa_.states.push_back(std::move(st));
    sets_.push_back(std::move(set));
    return id;
  }

  Status Expand(size_t i) {
    std::vector<std::vector<int32_t>> by_class(dfa_.num_classes);
    std::map<int32_t, std::vector<int32_t>> by_token, by_call;
    for (int32_t s : sets_[i]) {
      for (const NfaEdge& e : nfa_.edges[s]) {
        switch (e.kind) {
          case NfaEdge::Kind::kEps:
            break;
          case NfaEdge::Kind::kBytes:
            for (ByteRange r : g_.node(e.label).ranges)
              for (int c = dfa_.byte_class[r.lo]; c <= dfa_.byte_class[r.hi]; ++c) by_class[c].push_back(e.to);
            break;
          case NfaEdge::Kind::kToken:
            by_token[e.label].push_back(e.to);
            break;
          case NfaEdge::Kind::kCall:
            by_call[e.label].push_back(e.to);
            break;
        }
      }
    }
    std::vector<int32_t> byte_next(dfa_.num_classes, -1);
    bool any_byte = false;
    for (int c = 0; c < dfa_.num_classes; ++c) {
      if (by_class[c].empty()) continue;
      ASSIGN_OR_RETURN(byte_next[c], Intern(Closure(std::move(by_class[c]))));
      any_byte = true;
    }
    std::vector<std::pair<int32_t, int32_t>> tokens, calls;
    for (auto& [token, targets] : by_token) {
      ASSIGN_OR_RETURN(int32_t to, Intern(Closure(std::move(targets))));
      tokens.push_back({token, to});
    }
    for (auto& [callee, targets] : by_call) {
      ASSIGN_OR_RETURN(int32_t to, Intern(Closure(std::move(targets))));
      calls.push_back({callee, to});
    }
    RuleDfa::State& st = dfa_.states[i];
    if (any_byte) st.byte_next = std::move(byte_next);
    st.tokens = std::move(tokens);
    st.calls = std::move(calls);
    return Status::OK();
  }

  const Grammar& g_;
  const NfaBuilder& nfa_;
  RuleId rule_;
  std::vector<uint32_t> stamp_;
  uint32_t current_stamp_ = 0;
  std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> index_;
  std::vector<std::vector<int32_t>> sets_;
  size_t set_states_ = 0;  // the sizes of sets_, summed
  RuleDfa dfa_;
};

}  // namespace

Result<RuleDfa> BuildRuleDfa(const Grammar& grammar, RuleId rule, const std::vector<uint8_t>& inlined) {
  NfaBuilder nfa(grammar, inlined);
  RETURN_IF_ERROR(nfa.Build(rule));
  return SubsetBuilder(grammar, nfa, rule).Build();
}

}  // namespace llmhost::grammar
