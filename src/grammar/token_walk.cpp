#include "grammar/token_walk.h"

#include <algorithm>
#include <optional>

#include "grammar/plain_rows.h"
#include "grammar/text_cover.h"
#include "grammar/text_tokens.h"
#include "grammar/token_trie.h"

namespace llmhost::grammar {
namespace {

// One node of the current trie path. Its stacks are tops[begin, end), or,
// in the fast form (`single` >= 0, a slot of PlainRows), the one frame
// (state, kOutside) of a state without calls: never put in the arena. In the fast
// form `text` is a position inside a character (grammar/text_tokens.h)
// after the path's bytes, kDead when none is known, and `text_path` says
// whether the whole path is text from a character boundary.
struct Level {
  size_t begin = 0, end = 0;
  size_t arena_mark = 0;
  int32_t single = -1;
  uint8_t text = TextTokens::kDead;
  bool text_path = false;
};

void SetBit(std::span<uint32_t> mask, int32_t id) { mask[static_cast<size_t>(id) >> 5] |= 1u << (id & 31); }

}  // namespace

Result<LocalTokenSets> WalkFromState(const CompiledGrammar& g, int32_t state) {
  const TokenTrie& trie = g.vocab().trie();
  const TextTokens& text = g.vocab().text_tokens();
  const uint8_t* text_next = TextTokens::NextTable();
  std::span<const TokenTrie::Node> nodes = trie.nodes();
  StackArena arena;
  StackStepper stepper(g, &arena);
  std::vector<int32_t> tops, raw;
  LocalTokenSets out;
  out.accepted.assign(trie.token_bits().size(), 0);
  auto accept_ranks = [&](int32_t begin, int32_t end) {
    for (int32_t r = begin; r < end; ++r) SetBit(out.accepted, trie.id_of_rank(r));
  };

  std::vector<Level> path(1);
  std::optional<PlainRows> plain;
  std::optional<TextCover> cover;
  // Text from a boundary keeps the start alive: every text token is allowed
  // (one mask), and the walk skips the subtrees that hold only those.
  bool boundary_covered = false;
  if (g.call_edges(state).empty()) {
    plain.emplace(g, state);
    cover.emplace(&*plain, text.height(0));
    path[0].single = plain->Slot(0);
    path[0].text = TextTokens::kBoundary;
    path[0].text_path = true;
    // Every token is at most the root's height long.
    boundary_covered = cover->Covers(TextTokens::kBoundary, 0, text.height(0), TextTokens::kAllKinds);
    if (boundary_covered) out.accepted.assign(text.from_boundary().begin(), text.from_boundary().end());
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
      int32_t v = plain->Next(up.single, node.byte);
      if (v >= 0) {
        uint8_t p = up.text == TextTokens::kDead ? TextTokens::kDead : text_next[up.text * 256 + node.byte];
        next.text_path = up.text_path && p != TextTokens::kDead;
        // Any position will do for the test below; after an ASCII byte the
        // path is between characters whatever came before.
        if (p == TextTokens::kDead && node.byte < 0x80) p = TextTokens::kBoundary;
        if (p != TextTokens::kDead && ((text.below(i) >> p) & 1)) {
          if (next.text_path && boundary_covered) {  // already in from_boundary()
            i = node.subtree_end;
            continue;
          }
          if (cover->Covers(p, v, text.height(i), text.kinds(i))) {
            accept_ranks(node.rank_begin, node.rank_end);
            i = node.subtree_end;
            continue;
          }
        }
        next.single = plain->Slot(v);
        next.text = p;
        live = true;
        escaped = plain->accepting(v);
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
      accept_ranks(node.rank_begin, node.rank_here_end);
      if (escaped)
        for (int32_t c = i + 1; c < node.subtree_end; c = nodes[c].subtree_end)
          out.escapes.push_back({nodes[c].byte, c});
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
