#include "grammar/grammar.h"

#include <algorithm>

namespace llmhost::grammar {
namespace {

// Code points whose UTF-8 encodings have 1, 2, 3 and 4 bytes.
constexpr char32_t kLengthLimits[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
constexpr char32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

int EncodeUtf8(char32_t c, uint8_t out[4]) {
  if (c < 0x80) {
    out[0] = static_cast<uint8_t>(c);
    return 1;
  }
  if (c < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (c >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (c >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (c >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (c & 0x3F));
  return 4;
}

// Splits [lo, hi] (one encoded length, no surrogates) into ranges whose
// encodings differ only in independent per-byte ranges: each becomes one
// sequence of byte ranges. (The construction of Russ Cox's utf8 ranges.)
void SplitEncoded(char32_t lo, char32_t hi, std::vector<std::vector<ByteRange>>* out) {
  for (int i = 1; i < 4; ++i) {
    char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        SplitEncoded(lo, lo | m, out);
        SplitEncoded((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        SplitEncoded(lo, (hi & ~m) - 1, out);
        SplitEncoded(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  int n = EncodeUtf8(lo, a);
  EncodeUtf8(hi, b);
  std::vector<ByteRange> seq;
  for (int k = 0; k < n; ++k) seq.push_back({a[k], b[k]});
  out->push_back(std::move(seq));
}

// Sorted, merged, clamped to scalar values; surrogates removed.
std::vector<CodepointRange> NormalizeCodepoints(std::vector<CodepointRange> ranges) {
  std::vector<CodepointRange> clean;
  for (CodepointRange r : ranges) {
    if (r.lo > r.hi || r.lo > kMaxCodepoint) continue;
    r.hi = std::min(r.hi, kMaxCodepoint);
    clean.push_back(r);
  }
  std::sort(clean.begin(), clean.end(), [](auto a, auto b) { return a.lo < b.lo; });
  std::vector<CodepointRange> merged;
  for (CodepointRange r : clean) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) merged.back().hi = std::max(merged.back().hi, r.hi);
    else merged.push_back(r);
  }
  std::vector<CodepointRange> out;
  for (CodepointRange r : merged) {
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      out.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) out.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) out.push_back({kSurrogateHi + 1, r.hi});
  }
  return out;
}

std::vector<CodepointRange> Complement(const std::vector<CodepointRange>& sorted) {
  std::vector<CodepointRange> out;
  char32_t next = 0;
  for (CodepointRange r : sorted) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return out;
}

}  // namespace

NodeId Grammar::Add(Node n) {
  if (nodes_.size() >= kMaxNodes) {
    // Over the limit: Validate fails; hand back an existing node meanwhile so
    // that builders need not check every call.
    too_big_ = true;
    return static_cast<NodeId>(nodes_.size() - 1);
  }
  nodes_.push_back(std::move(n));
  return static_cast<NodeId>(nodes_.size() - 1);
}

RuleId Grammar::AddRule(std::string name) {
  rules_.push_back(Rule{std::move(name), -1});
  return static_cast<RuleId>(rules_.size() - 1);
}

void Grammar::SetBody(RuleId rule, NodeId body) { rules_[rule].body = body; }

std::optional<RuleId> Grammar::FindRule(std::string_view name) const {
  for (size_t i = 0; i < rules_.size(); ++i)
    if (rules_[i].name == name) return static_cast<RuleId>(i);
  return std::nullopt;
}

NodeId Grammar::Empty() { return Add(Node{}); }

NodeId Grammar::Bytes(std::vector<ByteRange> ranges) {
  for (ByteRange& r : ranges)
    if (r.lo > r.hi) std::swap(r.lo, r.hi);
  std::sort(ranges.begin(), ranges.end(), [](auto a, auto b) { return a.lo < b.lo; });
  std::vector<ByteRange> merged;
  for (ByteRange r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) merged.back().hi = std::max(merged.back().hi, r.hi);
    else merged.push_back(r);
  }
  Node n;
  n.kind = Node::Kind::kBytes;
  n.ranges = std::move(merged);
  return Add(std::move(n));
}

NodeId Grammar::Literal(std::string_view bytes) {
  if (bytes.empty()) return Empty();
  if (bytes.size() == 1) return Byte(static_cast<uint8_t>(bytes[0]));
  std::vector<NodeId> seq;
  for (char c : bytes) seq.push_back(Byte(static_cast<uint8_t>(c)));
  return Seq(std::move(seq));
}

NodeId Grammar::Codepoints(std::vector<CodepointRange> ranges, bool negate) {
  std::vector<CodepointRange> set = NormalizeCodepoints(std::move(ranges));
  if (negate) set = NormalizeCodepoints(Complement(set));
  std::vector<std::vector<ByteRange>> seqs;
  for (CodepointRange r : set) {
    // Split at the encoded-length boundaries, then per byte.
    char32_t lo = r.lo;
    for (char32_t limit : kLengthLimits) {
      if (lo > r.hi) break;
      if (lo > limit) continue;
      char32_t hi = std::min(r.hi, limit);
      SplitEncoded(lo, hi, &seqs);
      lo = hi + 1;
    }
  }
  // Sequences of one byte merge into a single class.
  std::vector<ByteRange> single;
  std::vector<NodeId> alts;
  for (const auto& seq : seqs) {
    if (seq.size() == 1) {
      single.push_back(seq[0]);
      continue;
    }
    std::vector<NodeId> parts;
    for (ByteRange b : seq) parts.push_back(Bytes({b}));
    alts.push_back(Seq(std::move(parts)));
  }
  if (!single.empty() || alts.empty()) alts.insert(alts.begin(), Bytes(std::move(single)));
  return Alt(std::move(alts));
}

NodeId Grammar::Token(int32_t id) {
  Node n;
  n.kind = Node::Kind::kToken;
  n.token = id;
  return Add(std::move(n));
}

NodeId Grammar::Seq(std::vector<NodeId> children) {
  if (children.empty()) return Empty();
  if (children.size() == 1) return children[0];
  Node n;
  n.kind = Node::Kind::kSeq;
  n.children = std::move(children);
  return Add(std::move(n));
}

NodeId Grammar::Alt(std::vector<NodeId> children) {
  if (children.size() == 1) return children[0];
  Node n;
  n.kind = Node::Kind::kAlt;  // no children: matches nothing
  n.children = std::move(children);
  return Add(std::move(n));
}

NodeId Grammar::Repeat(NodeId child, int32_t min, int32_t max) {
  Node n;
  n.kind = Node::Kind::kRepeat;
  n.children = {child};
  n.min = min;
  n.max = max;
  return Add(std::move(n));
}

NodeId Grammar::Ref(RuleId rule) {
  Node n;
  n.kind = Node::Kind::kRef;
  n.rule = rule;
  return Add(std::move(n));
}

Status Grammar::Validate() const {
  if (too_big_) return Status::InvalidArgument("grammar: more than " + std::to_string(kMaxNodes) + " nodes");
  if (root_ < 0 || static_cast<size_t>(root_) >= rules_.size())
    return Status::InvalidArgument("grammar: no root rule");
  for (const Rule& r : rules_) {
    if (r.body < 0 || static_cast<size_t>(r.body) >= nodes_.size())
      return Status::InvalidArgument("grammar: rule '" + r.name + "' has no body");
  }
  for (const Node& n : nodes_) {
    for (NodeId c : n.children)
      if (c < 0 || static_cast<size_t>(c) >= nodes_.size())
        return Status::InvalidArgument("grammar: node " + std::to_string(c) + " does not exist");
    if (n.kind == Node::Kind::kRef && (n.rule < 0 || static_cast<size_t>(n.rule) >= rules_.size()))
      return Status::InvalidArgument("grammar: reference to rule " + std::to_string(n.rule) +
                                     ", which does not exist");
    if (n.kind == Node::Kind::kRepeat) {
      bool bad_min = n.min < 0 || n.min > kMaxRepeat;
      bool bad_max = n.max != -1 && (n.max < n.min || n.max > kMaxRepeat);
      if (n.children.size() != 1 || bad_min || bad_max)
        return Status::InvalidArgument("grammar: repetition {" + std::to_string(n.min) + "," +
                                       std::to_string(n.max) + "} out of range (0.." +
                                       std::to_string(kMaxRepeat) + ")");
    }
    if (n.kind == Node::Kind::kToken && n.token < 0)
      return Status::InvalidArgument("grammar: token id " + std::to_string(n.token) + " is negative");
  }
  return Status::OK();
}

}  // namespace llmhost::grammar
