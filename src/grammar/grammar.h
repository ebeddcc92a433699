// Grammar: a context-free grammar over bytes, the one form that JSON Schema
// (grammar/json_schema.h), regular expressions (grammar/regex.h), choices and
// GBNF (grammar/gbnf.h) compile to before grammar/compiled_grammar.h turns it
// into automata over a tokenizer's vocabulary.
//
// Expressions are nodes in one arena, named by index. A rule names one node
// and may be referenced before its body is set, so recursive rules need no
// forward declarations. Terminals are single bytes (a set of byte ranges) and
// special tokens by id (`<tool_call>` where the vocabulary has it as one
// token); text of several bytes is a sequence. Code-point classes are built
// as alternatives of UTF-8 byte sequences, so the automata never decode.
//
// Size is bounded (kMaxNodes, kMaxRepeat): grammars come from requests.
// A repeat count may be large: Compile writes long counted repeats as calls
// of shared block rules (grammar/repeat_lowering.h) instead of unrolling.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace llmhost::grammar {

using NodeId = int32_t;
using RuleId = int32_t;

inline constexpr size_t kMaxNodes = 1 << 20;
inline constexpr int32_t kMaxRepeat = 10'000'000;  // largest finite {min,max} bound
inline constexpr char32_t kMaxCodepoint = 0x10FFFF;

struct ByteRange {
  uint8_t lo = 0, hi = 0;  // inclusive
  bool operator==(const ByteRange&) const = default;
};

struct CodepointRange {
  char32_t lo = 0, hi = 0;  // inclusive
  bool operator==(const CodepointRange&) const = default;
};

struct Node {
  enum class Kind : uint8_t {
    kEmpty,   // matches ""
    kBytes,   // one byte in any of `ranges` (sorted, disjoint)
    kToken,   // the special token `token`
    kSeq,     // children in order
    kAlt,     // any one child
    kRepeat,  // children[0], min..max times (max -1: unbounded)
    kRef,     // the body of rule `rule`
  };
  Kind kind = Kind::kEmpty;
  std::vector<ByteRange> ranges;
  int32_t token = -1;
  std::vector<NodeId> children;
  int32_t min = 0, max = -1;
  RuleId rule = -1;
};

struct Rule {
  std::string name;
  NodeId body = -1;  // -1 until SetBody
};

class Grammar {
 public:
  // A new rule without a body. Names need not be unique (FindRule returns
  // the first); they appear in error messages.
  RuleId AddRule(std::string name);
  void SetBody(RuleId rule, NodeId body);
  std::optional<RuleId> FindRule(std::string_view name) const;
  void SetRoot(RuleId rule) { root_ = rule; }
  RuleId root() const { return root_; }

  NodeId Empty();
  NodeId Bytes(std::vector<ByteRange> ranges);  // normalized: sorted, merged
  NodeId Byte(uint8_t b) { return Bytes({{b, b}}); }
  NodeId Literal(std::string_view bytes);       // a sequence of bytes ("" is Empty)
  // One code point in `ranges` (or, with `negate`, any scalar value outside
  // them; surrogates D800-DFFF are never matched), as its UTF-8 encoding.
  NodeId Codepoints(std::vector<CodepointRange> ranges, bool negate = false);
  NodeId Token(int32_t id);
  NodeId Seq(std::vector<NodeId> children);     // one child: that child
  NodeId Alt(std::vector<NodeId> children);     // one child: that child
  NodeId Repeat(NodeId child, int32_t min, int32_t max);
  NodeId Optional(NodeId child) { return Repeat(child, 0, 1); }
  NodeId Ref(RuleId rule);
  // Node `id` becomes a copy of node `with`: every reference to `id` now
  // matches `with`'s language (compile-time rewrites; `with` must not
  // contain `id`).
  void Replace(NodeId id, NodeId with) { nodes_[id] = nodes_[with]; }

  const Node& node(NodeId id) const { return nodes_[id]; }
  const Rule& rule(RuleId id) const { return rules_[id]; }
  size_t node_count() const { return nodes_.size(); }
  size_t rule_count() const { return rules_.size(); }

  // InvalidArgument when the grammar cannot be compiled: no root, a rule
  // without a body, too many nodes, a repeat bound out of range. (Left
  // recursion and empty languages are found by Compile.)
  Status Validate() const;

 private:
  NodeId Add(Node n);

  std::vector<Node> nodes_;
  std::vector<Rule> rules_;
  RuleId root_ = -1;
  bool too_big_ = false;
};

}  // namespace llmhost::grammar
