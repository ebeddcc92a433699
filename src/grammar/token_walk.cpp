#include "grammar/token_walk.h"

#include <algorithm>
#include <optional>

#include "grammar/token_trie.h"

namespace llmhost::grammar {
namespace {

// One node of the current trie path. Its stacks are tops[begin, end), or,
// in the fast form (`single` >= 0, a row of PlainRows), the one frame
// (state, kOutside) of a plain state (grammar/compiled_grammar.h): never put
// in the arena. Most of a walk through a long string or free text is there.
struct Level {
  size_t begin = 0, end = 0;
  size_t arena_mark = 0;
  int32_t single = -1;
};

// Dense transitions among the plain states reachable from one plain state
// by bytes alone, so that the fast form costs one load per trie node:
// next[row * 256 + b] is a row (>= 0), -1 (no edge) or -2 - s for a state s
// that is not in the table (the general form takes over).
struct PlainRows {
  static constexpr size_t kMaxRows = 256;
  std::vector<int32_t> next;
  std::vector<int32_t> state;  // [row]

  PlainRows(const CompiledGrammar& g, int32_t start) {
    std::vector<std::pair<int32_t, int32_t>> row_of = {{start, 0}};  // (state, row), few
    state.push_back(start);
    for (size_t row = 0; row < state.size(); ++row) {
      next.resize((row + 1) * 256);
      for (int b = 0; b < 256; ++b) {
        int32_t t = g.NextOnByte(state[row], static_cast<uint8_t>(b));
        int32_t v = t < 0 ? -1 : -2 - t;
        if (t >= 0 && g.IsPlain(t)) {
          auto it = std::find_if(row_of.begin(), row_of.end(), [&](auto p) { return p.first == t; });
          if (it != row_of.end()) {
            v = it->second;
          } else if (state.size() < kMaxRows) {
            v = static_cast<int32_t>(state.size());
            row_of.push_back({t, v});
            state.push_back(t);
          }
        }
        next[row * 256 + b] = v;
      }
    }
  }
};

void SetBit(std::span<uint32_t> mask, int32_t id) { mask[static_cast<size_t>(id) >> 5] |= 1u << (id & 31); }

}  // namespace

Result<LocalTokenSets> WalkFromState(const CompiledGrammar& g, int32_t state) {
  const TokenTrie& trie = g.vocab().trie();
  std::span<const TokenTrie::Node> nodes = trie.nodes();
  StackArena arena;
  StackStepper stepper(g, &arena);
  std::vector<int32_t> tops, raw;
  LocalTokenSets out;
  out.accepted.reserve(trie.token_count());

  std::vector<Level> path(1);
  std::optional<PlainRows> plain;
  if (g.IsPlain(state)) {
    plain.emplace(g, state);
    path[0].single = 0;
  } else {
    raw.push_back(arena.Intern(state, kOutside));
    CloseResult root;
    RETURN_IF_ERROR(stepper.Close(raw, &tops, &root));
    // Finishing before any byte needs no record: the matcher's closed
    // stacks already hold the caller's frames as tops of their own.
    path[0].end = tops.size();
    path[0].arena_mark = arena.size();
  }
  int32_t n = static_cast<int32_t>(nodes.size());
  for (int32_t i = 1; i < n;) {
    const TokenTrie::Node& node = nodes[i];
    while (path.size() > static_cast<size_t>(node.depth)) {
      arena.Truncate(path.back().arena_mark);
      tops.resize(path.back().begin);
      path.pop_back();
    }
    const Level& up = path.back();
    Level next;
    next.begin = tops.size();
    next.arena_mark = arena.size();
    bool live = false, escaped = false;
    if (up.single >= 0) {
      int32_t v = plain->next[static_cast<size_t>(up.single) * 256 + node.byte];
      if (v >= 0) {
        next.single = v;
        live = true;
      } else if (v < -1) {
        raw.assign(1, arena.Intern(-2 - v, kOutside));
      } else {
        raw.clear();
      }
    } else {
      raw.clear();
      stepper.StepByte(std::span<const int32_t>(tops).subspan(up.begin, up.end - up.begin), node.byte, &raw);
    }
    if (next.single < 0 && !raw.empty()) {
      CloseResult here;
      RETURN_IF_ERROR(stepper.Close(raw, &tops, &here));
      escaped = here.escaped;
      live = tops.size() > next.begin;
      next.end = tops.size();
    }
    if (live || escaped) {
      for (int32_t r = node.rank_begin; r < node.rank_here_end; ++r) out.accepted.push_back(r);
      if (escaped)
        for (int32_t c = i + 1; c < node.subtree_end; c = nodes[c].subtree_end) out.escapes.push_back({nodes[c].byte, c});
    }
    if (live) {
      path.push_back(next);
      ++i;
      continue;
    }
    arena.Truncate(next.arena_mark);
    tops.resize(next.begin);
    i = node.subtree_end;
  }
  std::sort(out.escapes.begin(), out.escapes.end());
  return out;
}

Status WalkSubtree(const CompiledGrammar& g, StackArena* arena, std::span<const int32_t> tops_in, int32_t first,
                   std::span<uint32_t> mask) {
  const TokenTrie& trie = g.vocab().trie();
  std::span<const TokenTrie::Node> nodes = trie.nodes();
  StackStepper stepper(g, arena);
  size_t base_mark = arena->size();
  std::vector<int32_t> tops(tops_in.begin(), tops_in.end()), raw;
  // path[k]: the stacks after the k-th byte below first's parent.
  std::vector<Level> path(1);
  path[0].end = tops.size();
  path[0].arena_mark = base_mark;
  int32_t base_depth = nodes[first].depth - 1;
  Status status;
  for (int32_t i = first, end = nodes[first].subtree_end; i < end;) {
    const TokenTrie::Node& node = nodes[i];
    while (path.size() > static_cast<size_t>(node.depth - base_depth)) {
      arena->Truncate(path.back().arena_mark);
      tops.resize(path.back().begin);
      path.pop_back();
    }
    const Level& up = path.back();
    Level next;
    next.begin = tops.size();
    next.arena_mark = arena->size();
    raw.clear();
    stepper.StepByte(std::span<const int32_t>(tops).subspan(up.begin, up.end - up.begin), node.byte, &raw);
    CloseResult here;
    status = stepper.Close(raw, &tops, &here);
    if (!status.ok()) break;
    next.end = tops.size();
    bool live = next.end > next.begin;
    // Finishing at the bottom keeps the tokens that end here alive.
    if (live || here.can_end)
      for (int32_t r = node.rank_begin; r < node.rank_here_end; ++r) SetBit(mask, trie.id_of_rank(r));
    if (live) {
      path.push_back(next);
      ++i;
      continue;
    }
    arena->Truncate(next.arena_mark);
    tops.resize(next.begin);
    i = node.subtree_end;
  }
  arena->Truncate(base_mark);
  return status;
}

}  // namespace llmhost::grammar
