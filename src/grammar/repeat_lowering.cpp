#include "grammar/repeat_lowering.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "grammar/rule_automaton.h"

namespace llmhost::grammar {
namespace {

constexpr int64_t kHuge = int64_t{1} << 40;  // sizes saturate here

int64_t Add(int64_t a, int64_t b) { return std::min(kHuge, a + b); }
int64_t Mul(int64_t a, int64_t b) { return b != 0 && a > kHuge / b ? kHuge : std::min(kHuge, a * b); }

// Copies of the child a repeat unrolls to.
int64_t Copies(const Node& n) { return n.max == -1 ? int64_t{n.min} + 1 : n.max; }

// Walks every rule body computing the estimated automaton states of each
// node, as rule_automaton.cpp builds them (references to inlined rules
// expanded, others one call). With a grammar to write, lowers each long
// repeat after its child, so that an outer repeat sees its child's lowered
// size; without one, only finds whether there is a long repeat.
class RepeatWalk {
 public:
  RepeatWalk(const Grammar& read, Grammar* write, std::vector<uint8_t>* inlined, RepeatLimits limits)
      : read_(read), write_(write), inlined_(*inlined), limits_(limits) {
    limits_.unroll_any = std::max(limits_.unroll_any, limits_.unroll);
    limits_.block = std::clamp<int64_t>(limits_.block, 4, std::max<int64_t>(limits_.unroll, 4));
  }

  // Without a grammar to write: whether some repeat is past limits.unroll.
  // With one: whether some repeat was lowered. The rules lowering adds are
  // not walked.
  bool Run() {
    size_t rules = read_.rule_count();
    for (size_t r = 0; r < rules && !(found_ && write_ == nullptr); ++r) {
      owner_ = static_cast<RuleId>(r);
      Size(read_.rule(owner_).body, 0);
    }
    return found_;
  }

 private:
  // A child's block: `block` calls P = x{leaf}, where x is the child or, when
  // the child is too large for two copies in a block, a call of it.
  struct Block {
    NodeId x, block;
    int64_t leaf;
  };
  enum class Shape : uint8_t { kNullable, kPrefixCode, kOther };

  int64_t Size(NodeId id, int depth) {
    if (memo_.size() < read_.node_count()) {
      memo_.resize(read_.node_count(), -1);
      busy_.resize(read_.node_count(), 0);
    }
    if (memo_[id] >= 0) return memo_[id];
    // Too deep, or a node inside itself: the automaton builder reports those.
    if (depth > kMaxNodeDepth || busy_[id]) return kHuge;
    busy_[id] = 1;
    // A copy where the walk writes: lowering appends nodes.
    Node copy;
    const Node* n = &read_.node(id);
    if (write_ != nullptr) {
      copy = *n;
      n = &copy;
    }
    int64_t size = 0;
    switch (n->kind) {
      case Node::Kind::kEmpty:
        break;
      case Node::Kind::kBytes:
      case Node::Kind::kToken:
        size = 1;
        break;
      case Node::Kind::kSeq:
      case Node::Kind::kAlt:
        size = n->kind == Node::Kind::kAlt ? 1 : 0;
        for (NodeId c : n->children) size = Add(size, Size(c, depth + 1));
        break;
      case Node::Kind::kRef:
        size = inlined_[n->rule] ? Size(read_.rule(n->rule).body, depth + 1) : 1;
        break;
      case Node::Kind::kRepeat: {
        // A child that unrolls to nothing still costs a step per count.
        int64_t child = std::max<int64_t>(1, Size(n->children[0], depth + 1));
        int64_t unrolled = Mul(child, Copies(*n));
        size = Add(unrolled, 1);
        if (Copies(*n) < 2 || unrolled <= limits_.unroll) break;
        if (write_ == nullptr) {
          found_ = true;
          break;
        }
        if (!Lowers(n->children[0], unrolled)) break;
        found_ = true;
        write_->Replace(id, Lower(n->children[0], child, n->min, n->max));
        busy_[id] = 0;
        size = Size(id, depth);  // the lowered form, its long counts of blocks lowered too
        break;
      }
    }
    busy_[id] = 0;
    memo_[id] = size;
    return size;
  }

  // Whether a repeat of `child` past limits.unroll is lowered (see
  // RepeatLimits). A count of blocks always is: its child was lowered.
  bool Lowers(NodeId child, int64_t unrolled) {
    if (block_nodes_.count(child)) return true;
    auto it = shape_.find(child);
    if (it == shape_.end()) it = shape_.emplace(child, ShapeOf(child)).first;
    switch (it->second) {
      case Shape::kPrefixCode:
        return true;
      case Shape::kOther:
        return unrolled > limits_.unroll_any;
      case Shape::kNullable:
        return false;
    }
    return false;
  }

  // What `child`'s DFA (over bytes, special tokens and calls, each call one
  // symbol) says of its language: it holds "" (kNullable); no string of it
  // begins another (kPrefixCode, from no path between accepting states:
  // a block then ends at one place); or neither, or unknown (kOther: calls,
  // whose strings the symbol hides, or an automaton too large). The probe
  // rule stays in the output, unreached.
  Shape ShapeOf(NodeId child) {
    RuleId probe = NewRule(read_.rule(owner_).name + " (repeat probe)", child);
    Result<RuleDfa> dfa = BuildRuleDfa(*write_, probe, inlined_);
    if (!dfa.ok()) return Shape::kOther;
    const std::vector<RuleDfa::State>& states = dfa->states;
    if (states[0].accepting) return Shape::kNullable;
    std::vector<uint8_t> reached(states.size(), 0);
    std::vector<int32_t> todo;
    bool calls = false;
    auto reach = [&](int32_t t) {
      if (t >= 0 && !reached[t]) {
        reached[t] = 1;
        todo.push_back(t);
      }
    };
    for (const RuleDfa::State& st : states) {
      calls = calls || !st.calls.empty();
      if (!st.accepting) continue;
      for (int32_t t : st.byte_next) reach(t);
      for (auto [token, t] : st.tokens) reach(t);
    }
    while (!todo.empty()) {
      const RuleDfa::State& st = states[todo.back()];
      todo.pop_back();
      if (st.accepting) return Shape::kOther;
      for (int32_t t : st.byte_next) reach(t);
      for (auto [token, t] : st.tokens) reach(t);
    }
    return calls ? Shape::kOther : Shape::kPrefixCode;
  }

  // `child` (of `size` states) min..max times, as in the header.
  NodeId Lower(NodeId child, int64_t size, int64_t min, int64_t max) {
    Grammar& g = *write_;
    const Block& b = BlockOf(child, size);
    std::vector<NodeId> parts;
    Append(&parts, b.block, min / b.leaf, min / b.leaf);
    Append(&parts, b.x, min % b.leaf, min % b.leaf);
    if (max == -1) {
      parts.push_back(g.Repeat(b.x, 0, -1));
      return g.Seq(std::move(parts));
    }
    int64_t m = max - min, q = m / b.leaf, r = m % b.leaf;
    if (q == 0 || r == b.leaf - 1) {
      Append(&parts, b.block, 0, q);
      Append(&parts, b.x, 0, q == 0 ? r : b.leaf - 1);
    } else {
      std::vector<NodeId> fewer, all;
      Append(&fewer, b.block, 0, q - 1);
      Append(&fewer, b.x, 0, b.leaf - 1);
      Append(&all, b.block, q, q);
      Append(&all, b.x, 0, r);
      parts.push_back(g.Alt({g.Seq(std::move(fewer)), g.Seq(std::move(all))}));
    }
    return g.Seq(std::move(parts));
  }

  const Block& BlockOf(NodeId child, int64_t size) {
    auto it = blocks_.find(child);
    if (it != blocks_.end()) return it->second;
    std::string name = read_.rule(owner_).name;
    bool call = size > limits_.block / 2;
    Block b;
    b.x = call ? write_->Ref(NewRule(name + " (repeated)", child)) : child;
    b.leaf = limits_.block / (call ? 1 : size);
    NodeId body = write_->Repeat(b.x, static_cast<int32_t>(b.leaf), static_cast<int32_t>(b.leaf));
    b.block = write_->Ref(NewRule(name + " (block of " + std::to_string(b.leaf) + ")", body));
    block_nodes_.insert(b.block);
    return blocks_.emplace(child, b).first->second;
  }

  RuleId NewRule(const std::string& name, NodeId body) {
    RuleId r = write_->AddRule(name);
    write_->SetBody(r, body);
    inlined_.push_back(0);
    return r;
  }

  // x{min,max}, left out where it matches only the empty string.
  void Append(std::vector<NodeId>* parts, NodeId x, int64_t min, int64_t max) {
    if (max > 0) parts->push_back(write_->Repeat(x, static_cast<int32_t>(min), static_cast<int32_t>(max)));
  }

  const Grammar& read_;
  Grammar* write_;
  std::vector<uint8_t>& inlined_;
  RepeatLimits limits_;
  RuleId owner_ = 0;  // the rule whose body is walked: names the new rules
  bool found_ = false;
  std::vector<int64_t> memo_;  // [node] estimated states, -1: not yet
  std::vector<uint8_t> busy_;  // [node] on the walk's path
  std::map<NodeId, Block> blocks_;  // by child
  std::set<NodeId> block_nodes_;    // the calls of blocks
  std::map<NodeId, Shape> shape_;   // by child
};

}  // namespace

std::optional<Grammar> LowerLongRepeats(const Grammar& g, std::vector<uint8_t>* inlined, RepeatLimits limits) {
  if (!RepeatWalk(g, nullptr, inlined, limits).Run()) return std::nullopt;
  Grammar out = g;
  std::vector<uint8_t> out_inlined = *inlined;
  if (!RepeatWalk(out, &out, &out_inlined, limits).Run()) return std::nullopt;
  *inlined = std::move(out_inlined);
  return out;
}

}  // namespace llmhost::grammar
