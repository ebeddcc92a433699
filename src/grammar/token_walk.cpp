#include "grammar/token_walk.h"

#include <algorithm>

#include "grammar/token_trie.h"

namespace llmhost::grammar {
namespace {

// One node of the current trie path: its stacks are tops[begin, end).
struct Level {
  int32_t node;
  size_t begin, end;
  size_t arena_mark;
  bool escaped;  // the rule could finish at this node or above (WalkFromState)
};

void AddRange(std::vector<int32_t>* out, int32_t lo, int32_t hi) {
  for (int32_t r = lo; r < hi; ++r) out->push_back(r);
}

}  // namespace

Result<LocalTokenSets> WalkFromState(const CompiledGrammar& g, int32_t state) {
  const TokenTrie& trie = g.vocab().trie();
  std::span<const TokenTrie::Node> nodes = trie.nodes();
  StackArena arena;
  StackStepper stepper(g, &arena);
  std::vector<int32_t> tops, raw;
  LocalTokenSets out;

  raw.push_back(arena.Intern(state, kOutside));
  CloseResult root;
  RETURN_IF_ERROR(stepper.Close(raw, &tops, &root));
  std::vector<Level> path = {{0, 0, tops.size(), arena.size(), root.escaped}};
  int32_t n = static_cast<int32_t>(nodes.size());
  for (int32_t i = 1; i < n;) {
    const TokenTrie::Node& node = nodes[i];
    while (path.size() > static_cast<size_t>(node.depth)) {
      arena.Truncate(path.back().arena_mark);
      tops.resize(path.back().begin);
      path.pop_back();
    }
    const Level& up = path.back();
    size_t mark = arena.size(), begin = tops.size();
    raw.clear();
    stepper.StepByte(std::span<const int32_t>(tops).subspan(up.begin, up.end - up.begin), node.byte, &raw);
    CloseResult here;
    RETURN_IF_ERROR(stepper.Close(raw, &tops, &here));
    bool live = tops.size() > begin;
    if (!live && !here.escaped) {
      if (up.escaped) AddRange(&out.uncertain, node.rank_begin, node.rank_end);
    } else {
      AddRange(&out.accepted, node.rank_begin, node.rank_here_end);
      if (live) {
        // Levels hold the arena mark taken before their own frames.
        path.push_back({i, begin, tops.size(), mark, up.escaped || here.escaped});
        ++i;
        continue;
      }
      AddRange(&out.uncertain, node.rank_here_end, node.rank_end);
    }
    arena.Truncate(mark);
    tops.resize(begin);
    i = node.subtree_end;
  }
  std::sort(out.uncertain.begin(), out.uncertain.end());
  return out;
}

Status WalkRanks(const CompiledGrammar& g, StackArena* arena, std::span<const int32_t> tops_in,
                 std::span<const int32_t> ranks, std::span<uint32_t> mask) {
  if (ranks.empty()) return Status::OK();
  const TokenTrie& trie = g.vocab().trie();
  std::span<const TokenTrie::Node> nodes = trie.nodes();
  StackStepper stepper(g, arena);
  size_t base_mark = arena->size();
  std::vector<int32_t> tops(tops_in.begin(), tops_in.end()), raw, descent;
  std::vector<Level> path = {{0, 0, tops.size(), base_mark, false}};
  Status status;
  for (size_t k = 0; k < ranks.size();) {
    int32_t rank = ranks[k];
    while (path.size() > 1 && rank >= nodes[path.back().node].rank_end) {
      arena->Truncate(path.back().arena_mark);
      tops.resize(path.back().begin);
      path.pop_back();
    }
    // The nodes from below the deepest level down to the token's own.
    descent.clear();
    for (int32_t v = trie.node_of_rank(rank); v != path.back().node; v = nodes[v].parent) descent.push_back(v);
    bool dead = false;
    for (size_t d = descent.size(); d-- > 0 && !dead;) {
      const TokenTrie::Node& node = nodes[descent[d]];
      const Level& up = path.back();
      size_t mark = arena->size(), begin = tops.size();
      raw.clear();
      stepper.StepByte(std::span<const int32_t>(tops).subspan(up.begin, up.end - up.begin), node.byte, &raw);
      CloseResult here;
      status = stepper.Close(raw, &tops, &here);
      if (!status.ok()) break;
      // Finishing at the bottom keeps the token (and none longer) alive.
      if (tops.size() == begin && !here.can_end) {
        arena->Truncate(mark);
        tops.resize(begin);
        // Skip every requested token under the dead node.
        k = std::lower_bound(ranks.begin() + k, ranks.end(), node.rank_end) - ranks.begin();
        dead = true;
      } else {
        path.push_back({descent[d], begin, tops.size(), mark, false});
      }
    }
    if (!status.ok()) break;
    if (dead) continue;
    int32_t id = trie.id_of_rank(rank);
    mask[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
    ++k;
  }
  arena->Truncate(base_mark);
  return status;
}

}  // namespace llmhost::grammar
