// A slow, simple recognizer of the grammar IR for tests: is a byte string in
// a node's (or rule's) language? An Earley parser over the IR's nodes, with
// nullable nodes advanced at prediction (Aycock & Horspool) and repeat
// counts kept in the item (an unbounded repeat's count stops at its min).
// Special tokens never match bytes. Cost O(n^3) in the text: short texts only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/grammar.h"

namespace llmhost::grammar::testing {

class GrammarOracle {
 public:
  explicit GrammarOracle(const Grammar& g) : g_(g), nullable_(g.node_count(), false) { ComputeNullable(); }

  bool MatchesRule(RuleId rule, std::string_view text) const { return Matches(g_.rule(rule).body, text); }
  bool MatchesRoot(std::string_view text) const { return MatchesRule(g_.root(), text); }

  bool Matches(NodeId start, std::string_view text) const {
    std::vector<Set> sets(text.size() + 1);
    Add(sets[0], {start, 0, 0});
    for (size_t i = 0; i <= text.size(); ++i) {
      Set& set = sets[i];
      for (size_t k = 0; k < set.items.size(); ++k) {
        Item item = set.items[k];
        const Node& n = g_.node(item.node);
        if (IsComplete(item)) Complete(sets, i, item);
        switch (n.kind) {
          case Node::Kind::kBytes:
            if (item.pos == 0 && i < text.size() && InRanges(n.ranges, static_cast<uint8_t>(text[i])))
              Add(sets[i + 1], {item.node, 1, item.origin});
            break;
          case Node::Kind::kSeq:
            if (item.pos < static_cast<int32_t>(n.children.size())) Predict(set, i, item, n.children[item.pos]);
            break;
          case Node::Kind::kAlt:
            if (item.pos == 0)
              for (NodeId c : n.children) Predict(set, i, item, c);
            break;
          case Node::Kind::kRepeat:
            if (n.max < 0 || item.pos < n.max) Predict(set, i, item, n.children[0]);
            break;
          case Node::Kind::kRef:
            if (item.pos == 0) Predict(set, i, item, g_.rule(n.rule).body);
            break;
          case Node::Kind::kEmpty:
          case Node::Kind::kToken:
            break;
        }
      }
    }
    for (const Item& item : sets.back().items)
      if (item.node == start && item.origin == 0 && IsComplete(item)) return true;
    return false;
  }

 private:
  struct Item {
    NodeId node;
    int32_t pos;  // Seq: children done; Alt, Ref, Bytes: 0 or 1; Repeat: count
    int32_t origin;
    bool operator==(const Item&) const = default;
  };
  struct ItemHash {
    size_t operator()(const Item& i) const {
      return std::hash<uint64_t>()((uint64_t(uint32_t(i.node)) << 32) ^ (uint64_t(uint32_t(i.pos)) << 20) ^
                                   uint32_t(i.origin));
    }
  };
  struct Set {
    std::vector<Item> items;
    std::unordered_set<Item, ItemHash> seen;
    std::unordered_map<NodeId, std::vector<Item>> waiting;  // by the node they wait for
  };

  static bool InRanges(const std::vector<ByteRange>& ranges, uint8_t b) {
    for (const auto& r : ranges)
      if (b >= r.lo && b <= r.hi) return true;
    return false;
  }
  static void Add(Set& set, Item item) {
    if (set.seen.insert(item).second) set.items.push_back(item);
  }

  bool IsComplete(const Item& item) const {
    const Node& n = g_.node(item.node);
    switch (n.kind) {
      case Node::Kind::kEmpty:
        return true;
      case Node::Kind::kSeq:
        return item.pos == static_cast<int32_t>(n.children.size());
      case Node::Kind::kRepeat:
        return item.pos >= n.min;
      case Node::Kind::kToken:
        return false;
      default:
        return item.pos == 1;
    }
  }

  Item Advance(const Item& item) const {
    const Node& n = g_.node(item.node);
    Item next = item;
    if (n.kind == Node::Kind::kRepeat) {
      next.pos = n.max < 0 ? std::min(item.pos + 1, n.min) : item.pos + 1;
    } else if (n.kind == Node::Kind::kSeq) {
      next.pos = item.pos + 1;
    } else {
      next.pos = 1;
    }
    return next;
  }

  void Predict(Set& set, size_t i, const Item& parent, NodeId child) const {
    set.waiting[child].push_back(parent);
    Add(set, {child, 0, static_cast<int32_t>(i)});
    if (nullable_[child]) Add(set, Advance(parent));
  }

  void Complete(std::vector<Set>& sets, size_t i, const Item& done) const {
    auto it = sets[done.origin].waiting.find(done.node);
    if (it == sets[done.origin].waiting.end()) return;
    std::vector<Item> parents = it->second;  // Add may grow the vector
    for (const Item& p : parents) Add(sets[i], Advance(p));
  }

  void ComputeNullable() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t id = 0; id < g_.node_count(); ++id) {
        if (nullable_[id]) continue;
        const Node& n = g_.node(static_cast<NodeId>(id));
        bool v = false;
        switch (n.kind) {
          case Node::Kind::kEmpty:
            v = true;
            break;
          case Node::Kind::kBytes:
          case Node::Kind::kToken:
            v = false;
            break;
          case Node::Kind::kSeq:
            v = std::all_of(n.children.begin(), n.children.end(), [&](NodeId c) { return nullable_[c]; });
            break;
          case Node::Kind::kAlt:
            v = std::any_of(n.children.begin(), n.children.end(), [&](NodeId c) { return nullable_[c]; });
            break;
          case Node::Kind::kRepeat:
            v = n.min == 0 || nullable_[n.children[0]];
            break;
          case Node::Kind::kRef: {
            NodeId body = g_.rule(n.rule).body;
            v = body >= 0 && nullable_[body];
            break;
          }
        }
        if (v) {
          nullable_[id] = true;
          changed = true;
        }
      }
    }
  }

  const Grammar& g_;
  std::vector<bool> nullable_;
};

}  // namespace llmhost::grammar::testing
