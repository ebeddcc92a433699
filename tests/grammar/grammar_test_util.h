// Helpers for the grammar tests: an independent recognizer that reads the
// node tree directly (no automata), a small vocabulary, random grammars.
#pragma once

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_vocab.h"

namespace llmhost::grammar::testing {

// Whether `text` is a prefix of (or, with `complete`, a string of) the
// grammar's language, by memoized sets of end positions over the node tree.
// Requires a grammar without left recursion, kToken nodes or empty classes.
class Recognizer {
 public:
  Recognizer(const Grammar& g, std::string text) : g_(g), s_(std::move(text)) {}

  bool IsPrefix() { return Ends(g_.rule(g_.root()).body, 0).off_end || Complete(); }
  bool Complete() { return Ends(g_.rule(g_.root()).body, 0).ends.count(s_.size()) > 0; }

 private:
  struct Result {
    std::set<size_t> ends;
    bool off_end = false;  // the input ran out inside the node
  };

  const Result& Ends(NodeId id, size_t from) {
    auto key = std::make_pair(id, from);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    Result r = Compute(id, from);
    return memo_[key] = std::move(r);
  }

  // Follows `child` from every position in `from`, merging into `out`.
  void Step(NodeId child, const std::set<size_t>& from, std::set<size_t>* next, bool* off_end) {
    for (size_t p : from) {
      const Result& r = Ends(child, p);
      next->insert(r.ends.begin(), r.ends.end());
      *off_end = *off_end || r.off_end;
    }
  }

  Result Compute(NodeId id, size_t from) {
    const Node& n = g_.node(id);
    Result r;
    switch (n.kind) {
      case Node::Kind::kEmpty:
        r.ends = {from};
        break;
      case Node::Kind::kBytes:
        if (from == s_.size()) {
          r.off_end = true;
        } else {
          uint8_t b = static_cast<uint8_t>(s_[from]);
          for (ByteRange br : n.ranges)
            if (b >= br.lo && b <= br.hi) r.ends = {from + 1};
        }
        break;
      case Node::Kind::kToken:
        break;
      case Node::Kind::kSeq: {
        std::set<size_t> cur = {from};
        for (NodeId c : n.children) {
          std::set<size_t> next;
          Step(c, cur, &next, &r.off_end);
          cur = std::move(next);
        }
        r.ends = std::move(cur);
        break;
      }
      case Node::Kind::kAlt:
        for (NodeId c : n.children) {
          const Result& cr = Ends(c, from);
          r.ends.insert(cr.ends.begin(), cr.ends.end());
          r.off_end = r.off_end || cr.off_end;
        }
        break;
      case Node::Kind::kRepeat: {
        std::set<size_t> cur = {from}, all;
        if (n.min == 0) all = cur;
        int limit = n.max == -1 ? static_cast<int>(s_.size()) + n.min + 1 : n.max;
        for (int i = 1; i <= limit && !cur.empty(); ++i) {
          std::set<size_t> next;
          Step(n.children[0], cur, &next, &r.off_end);
          if (n.max == -1 && i > n.min) {
            // Unbounded: only new positions matter once past the minimum.
            std::erase_if(next, [&](size_t p) { return all.count(p) > 0; });
          }
          if (i >= n.min) all.insert(next.begin(), next.end());
          cur = std::move(next);
        }
        r.ends = std::move(all);
        break;
      }
      case Node::Kind::kRef:
        r = Ends(g_.rule(n.rule).body, from);
        break;
    }
    return r;
  }

  const Grammar& g_;
  std::string s_;
  std::map<std::pair<NodeId, size_t>, Result> memo_;
};

// A small vocabulary over a, b, c, é (C3 A9) and € (E2 82 AC), with tokens
// that split characters, two special tokens and an EOS.
struct SmallVocab {
  std::vector<std::string> tokens;
  TokenId special1 = -1, special2 = -1, eos = -1;
  std::shared_ptr<const TokenVocab> vocab;

  SmallVocab() {
    for (std::string a : {"a", "b", "c"}) {
      tokens.push_back(a);
      for (std::string b : {"a", "b", "c"}) tokens.push_back(a + b);
    }
    for (const char* t : {"abc", "cab", "aaaa", "bbbbbb", "\xC3", "\xA9", "\xE2", "\x82", "\xAC", "\xC3\xA9",
                          "\xE2\x82\xAC", "a\xC3\xA9", "\xA9" "b", "\xE2\x82", "\x82\xAC" "c", "\xC3\xA9\xC3\xA9"})
      tokens.push_back(t);
    tokens.push_back("");  // a token without bytes: never allowed
    special1 = static_cast<TokenId>(tokens.size());
    tokens.push_back("<s1>");
    special2 = static_cast<TokenId>(tokens.size());
    tokens.push_back("<s2>");
    eos = static_cast<TokenId>(tokens.size());
    tokens.push_back("</s>");
    vocab = TokenVocab::FromBytes(tokens, {special1, special2, eos}, {eos});
  }
};

// A random grammar of a few rules over the SmallVocab alphabet (no tokens
// unless `with_tokens`). It may be left-recursive or fail otherwise to
// compile; callers skip those.
inline Grammar RandomGrammar(std::mt19937& rng, bool with_tokens = false, TokenId t1 = -1, TokenId t2 = -1) {
  Grammar g;
  int rules = 1 + rng() % 4;
  for (int i = 0; i < rules; ++i) g.AddRule("r" + std::to_string(i));
  g.SetRoot(0);
  std::function<NodeId(int)> gen = [&](int depth) -> NodeId {
    int pick = rng() % (depth >= 3 ? 4 : 9);
    switch (pick) {
      case 0:
        return g.Literal(std::string(1, "abc"[rng() % 3]));
      case 1: {
        static const char* lits[] = {"ab", "\xC3\xA9", "\xE2\x82\xAC", "ca", "b\xC3\xA9"};
        return g.Literal(lits[rng() % 5]);
      }
      case 2: {
        std::vector<CodepointRange> set;
        if (rng() % 2) set.push_back({'a', static_cast<char32_t>('a' + rng() % 3)});
        if (rng() % 2) set.push_back({0xE9, 0xE9});
        if (rng() % 2) set.push_back({0x20AC, 0x20AC});
        if (set.empty()) set.push_back({'c', 'c'});
        return g.Codepoints(set, rng() % 4 == 0);
      }
      case 3:
        if (with_tokens && rng() % 2) return g.Token(rng() % 2 ? t1 : t2);
        return g.Ref(static_cast<RuleId>(rng() % rules));
      case 4:
      case 5: {
        std::vector<NodeId> kids;
        for (int k = 0, n = 2 + rng() % 2; k < n; ++k) kids.push_back(gen(depth + 1));
        return g.Seq(kids);
      }
      case 6: {
        std::vector<NodeId> kids;
        for (int k = 0, n = 2 + rng() % 2; k < n; ++k) kids.push_back(gen(depth + 1));
        return g.Alt(kids);
      }
      case 7: {
        int min = rng() % 3;
        int max = rng() % 2 ? -1 : min + static_cast<int>(rng() % 3);
        return g.Repeat(gen(depth + 1), min, max);
      }
      default:
        return g.Ref(static_cast<RuleId>(rng() % rules));
    }
  };
  for (int i = 0; i < rules; ++i) g.SetBody(i, gen(0));
  return g;
}

}  // namespace llmhost::grammar::testing
