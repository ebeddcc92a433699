#include "grammar/local_automaton_key.h"

#include <algorithm>
#include <array>
#include <span>
#include <utility>

namespace llmhost::grammar {
namespace {

constexpr uint32_t kSeparator = 0xFFFFFFFFu;

// The states reachable from one state, numbered from 0 (the state) in
// breadth-first order, with their byte edges over the ranges that every
// rule among them keeps whole.
struct Region {
  std::vector<int32_t> states;                     // [local] -> grammar state
  std::vector<uint8_t> starts;                     // first byte of each range, ascending
  std::vector<int32_t> next;                       // [local * ranges + range] -> local, -1: none
  std::vector<uint32_t> flags;                     // [local]: accepting | has token edges << 1
  std::vector<int32_t> call_begin;                 // [local], + one past the end
  std::vector<std::pair<int32_t, int32_t>> calls;  // (callee start, return), local
};

// Local numbers of grammar states: open addressing over a table a few
// times kMaxKeyStates (the region stops growing past that).
class LocalIds {
 public:
  LocalIds() : slots_(4 * kMaxKeyStates, {-1, -1}) {}
  // The state's number, given the next one when new (`fresh` set).
  int32_t Get(int32_t state, int32_t next, bool* fresh) {
    size_t mask = slots_.size() - 1;
    size_t i = (static_cast<uint32_t>(state) * 0x9E3779B1u) & mask;
    while (slots_[i].first >= 0 && slots_[i].first != state) i = (i + 1) & mask;
    *fresh = slots_[i].first < 0;
    if (*fresh) slots_[i] = {state, next};
    return slots_[i].second;
  }

 private:
  std::vector<std::pair<int32_t, int32_t>> slots_;  // (state, local), size a power of two
};

bool BuildRegion(const CompiledGrammar& g, int32_t start, Region* r) {
  static_assert((4 * kMaxKeyStates & (4 * kMaxKeyStates - 1)) == 0);
  LocalIds local;
  std::array<bool, 256> cut{};
  cut[0] = true;
  std::vector<std::pair<int32_t, std::vector<uint8_t>>> rule_starts;  // first byte of each class; few rules
  auto class_starts = [&](int32_t rule) -> const std::vector<uint8_t>& {
    for (const auto& [k, v] : rule_starts)
      if (k == rule) return v;
    std::span<const uint8_t> cls = g.byte_classes(rule);
    std::vector<uint8_t> v = {0};
    for (int b = 1; b < 256; ++b)
      if (cls[b] != cls[b - 1]) {
        v.push_back(static_cast<uint8_t>(b));
        cut[b] = true;
      }
    rule_starts.push_back({rule, std::move(v)});
    return rule_starts.back().second;
  };
  bool overflow = false;  // past 2 * kMaxKeyStates: the table stays at most half full
  auto add = [&](int32_t s) {
    if (r->states.size() >= 2 * kMaxKeyStates) {
      overflow = true;
      return 0;
    }
    bool fresh;
    int32_t id = local.Get(s, static_cast<int32_t>(r->states.size()), &fresh);
    if (fresh) r->states.push_back(s);
    return id;
  };
  // by_class[q][class of q's rule] -> local target, -1: none.
  std::vector<std::vector<int32_t>> by_class;
  add(start);
  for (size_t q = 0; q < r->states.size(); ++q) {
    if (overflow || r->states.size() > kMaxKeyStates) return false;
    int32_t s = r->states[q];
    const CompiledGrammar::State& st = g.state(s);
    by_class.emplace_back();
    if (st.byte_row >= 0) {
      std::span<const uint8_t> cls = g.byte_classes(st.rule);
      for (uint8_t b : class_starts(st.rule)) {
        int32_t t = g.NextOnByte(s, b);
        if (by_class[q].size() <= cls[b]) by_class[q].resize(cls[b] + 1, -1);
        by_class[q][cls[b]] = t < 0 ? -1 : add(t);
      }
    }
    r->flags.push_back((st.accepting ? 1u : 0u) | (g.token_edges(s).empty() ? 0u : 2u));
    r->call_begin.push_back(static_cast<int32_t>(r->calls.size()));
    for (const CompiledGrammar::CallEdge& e : g.call_edges(s)) {
      int32_t callee = add(e.callee_start);
      r->calls.push_back({callee, add(e.next)});
    }
  }
  if (overflow || r->states.size() > kMaxKeyStates) return false;
  r->call_begin.push_back(static_cast<int32_t>(r->calls.size()));
  for (int b = 0; b < 256; ++b)
    if (cut[b]) r->starts.push_back(static_cast<uint8_t>(b));
  size_t n = r->states.size(), m = r->starts.size();
  r->next.assign(n * m, -1);
  for (size_t q = 0; q < n; ++q) {
    if (by_class[q].empty()) continue;
    std::span<const uint8_t> cls = g.byte_classes(g.state(r->states[q]).rule);
    for (size_t j = 0; j < m; ++j) r->next[q * m + j] = by_class[q][cls[r->starts[j]]];
  }
  return true;
}

// Splits blocks until every state of a block has the same flags, byte
// targets' blocks and calls' blocks (Moore's algorithm). False when it does
// not settle within kMaxKeyRounds.
bool Refine(const Region& r, std::vector<int32_t>* block) {
  size_t n = r.states.size(), m = r.starts.size();
  block->assign(n, 0);
  for (size_t q = 0; q < n; ++q) (*block)[q] = static_cast<int32_t>(r.flags[q]);
  size_t count = 0;
  std::vector<int32_t> sig, sig_begin(n + 1), fresh(n);
  size_t slots = 16;
  while (slots < 2 * n) slots *= 2;
  std::vector<int32_t> table(slots);  // open addressing: a representative state, -1: empty
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (int round = 0; round <= kMaxKeyRounds; ++round) {
    sig.clear();
    for (size_t q = 0; q < n; ++q) {
      sig_begin[q] = static_cast<int32_t>(sig.size());
      sig.push_back((*block)[q]);
      for (size_t j = 0; j < m; ++j) {
        int32_t t = r.next[q * m + j];
        sig.push_back(t < 0 ? -1 : (*block)[t]);
      }
      pairs.clear();
      for (int32_t c = r.call_begin[q]; c < r.call_begin[q + 1]; ++c)
        pairs.push_back({(*block)[r.calls[c].first], (*block)[r.calls[c].second]});
      std::sort(pairs.begin(), pairs.end());
      pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
      for (auto [a, b] : pairs) {
        sig.push_back(a);
        sig.push_back(b);
      }
    }
    sig_begin[n] = static_cast<int32_t>(sig.size());
    auto span_of = [&](size_t q) {
      return std::span<const int32_t>(sig.data() + sig_begin[q], sig_begin[q + 1] - sig_begin[q]);
    };
    std::fill(table.begin(), table.end(), -1);
    size_t next_id = 0;
    for (size_t q = 0; q < n; ++q) {
      std::span<const int32_t> s = span_of(q);
      uint64_t h = s.size();
      for (int32_t x : s) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001b3ull;
      size_t slot = (h ^ (h >> 29)) & (slots - 1);
      while (table[slot] >= 0 && !std::ranges::equal(span_of(table[slot]), s)) slot = (slot + 1) & (slots - 1);
      if (table[slot] < 0) {
        table[slot] = static_cast<int32_t>(q);
        fresh[q] = static_cast<int32_t>(next_id++);
      } else {
        fresh[q] = fresh[table[slot]];
      }
    }
    bool stable = next_id == count;
    count = next_id;
    block->swap(fresh);
    if (stable) return true;
  }
  return false;
}

}  // namespace

std::optional<std::vector<uint32_t>> LocalAutomatonKey(const CompiledGrammar& g, int32_t state) {
  Region r;
  if (!BuildRegion(g, state, &r)) return std::nullopt;
  std::vector<int32_t> block;
  if (!Refine(r, &block)) return std::nullopt;

  size_t n = r.states.size(), m = r.starts.size();
  std::vector<int32_t> rep(n, -1), canon(n, -1), order;
  for (size_t q = n; q-- > 0;) rep[block[q]] = static_cast<int32_t>(q);
  auto number = [&](int32_t b) {
    if (canon[b] < 0) {
      canon[b] = static_cast<int32_t>(order.size());
      order.push_back(b);
    }
    return static_cast<uint32_t>(canon[b]);
  };
  number(block[0]);
  std::vector<uint32_t> key;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (size_t k = 0; k < order.size(); ++k) {
    int32_t q = rep[order[k]];
    key.push_back(r.flags[q]);
    uint32_t prev = kSeparator;
    for (size_t j = 0; j < m; ++j) {
      int32_t t = r.next[q * m + j];
      uint32_t to = t < 0 ? 0 : number(block[t]) + 1;
      if (to == prev) continue;
      key.push_back(r.starts[j]);
      key.push_back(to);
      prev = to;
    }
    key.push_back(kSeparator);
    pairs.clear();
    for (int32_t c = r.call_begin[q]; c < r.call_begin[q + 1]; ++c)
      pairs.push_back({number(block[r.calls[c].first]), number(block[r.calls[c].second])});
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    for (auto [callee, resume] : pairs) {
      key.push_back(callee);
      key.push_back(resume);
    }
    key.push_back(kSeparator);
  }
  return key;
}

}  // namespace llmhost::grammar
