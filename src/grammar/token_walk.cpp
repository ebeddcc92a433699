#include "grammar/token_walk.h"

#include <algorithm>

#include "grammar/token_trie.h"

namespace llmhost::grammar {
namespace {

// One node of the current trie path. Its stacks are tops[begin, end), or,
// in the fast form (`single` >= 0), the one frame (single, kOutside) that is
// never put in the arena: a state with no calls that cannot finish, which
// is most of a walk through a long string or free text.
struct Level {
  size_t begin = 0, end = 0;
  size_t arena_mark = 0;
  int32_t single = -1;
};

void SetBit(std::span<uint32_t> mask, int32_t id) { mask[static_cast<size_t>(id) >> 5] |= 1u << (id & 31); }

bool Simple(const CompiledGrammar& g, int32_t s) {
  return !g.state(s).accepting && g.call_edges(s).empty();
}

}  // namespace

Result<LocalTokenSets> WalkFromState(const CompiledGrammar& g, int32_t state) {
  const TokenTrie& trie = g.vocab().trie();
  std::span<const TokenTrie::Node> nodes = trie.nodes();
  StackArena arena;
  StackStepper stepper(g, &arena);
  std::vector<int32_t> tops, raw;
  LocalTokenSets out;

  std::vector<Level> path(1);
  if (Simple(g, state)) {
    path[0].single = state;
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
      int32_t s = g.NextOnByte(up.single, node.byte);
      if (s >= 0 && Simple(g, s)) {
        next.single = s;
        live = true;
      } else if (s >= 0) {
        raw.assign(1, arena.Intern(s, kOutside));
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
