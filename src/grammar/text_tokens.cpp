#include "grammar/text_tokens.h"

#include <algorithm>

#include "grammar/token_trie.h"

namespace llmhost::grammar {
namespace {

// Positions: 0 between characters; 1 one continuation byte to go; 2 two to
// go; 3 after E0 (A0-BF next: no overlong forms); 4 after ED (80-9F: no
// surrogates); 5 three to go; 6 after F0 (90-BF); 7 after F4 (80-8F: up to
// U+10FFFF).
TextTokens::Kind KindOfByte(uint8_t b) {
  if (b >= 0x80) return TextTokens::kNonAscii;
  if (b < 0x20 || b == 0x7F || b == '"' || b == '\\') return TextTokens::kKinds;
  if (b >= 'a' && b <= 'z') return TextTokens::kLower;
  if (b >= 'A' && b <= 'Z') return TextTokens::kUpper;
  if (b >= '0' && b <= '9') return TextTokens::kDigit;
  switch (b) {
    case ' ':
      return TextTokens::kSpace;
    case '_':
      return TextTokens::kUnderscore;
    case '-':
      return TextTokens::kHyphen;
    case '.':
      return TextTokens::kDot;
    case ',':
    case ';':
    case ':':
      return TextTokens::kSeparator;
    case '/':
      return TextTokens::kSlash;
    default:
      return TextTokens::kOtherAscii;
  }
}

struct Tables {
  std::array<std::array<uint8_t, 256>, TextTokens::kPositions> next;  // contiguous: [p * 256 + b]
  std::array<std::vector<std::pair<uint8_t, uint8_t>>, TextTokens::kPositions> bytes;
  // before[b][mask]: the positions p with next[p][b] in `mask`.
  std::array<std::array<uint8_t, 256>, 256> before;
  std::array<TextTokens::Kind, 256> kind;

  Tables() {
    for (auto& row : next) row.fill(TextTokens::kDead);
    auto set = [&](int p, int lo, int hi, int to) {
      for (int b = lo; b <= hi; ++b) next[p][b] = static_cast<uint8_t>(to);
    };
    set(0, 0x20, 0x7E, 0);
    next[0]['"'] = next[0]['\\'] = TextTokens::kDead;
    set(0, 0xC2, 0xDF, 1);
    set(0, 0xE0, 0xE0, 3);
    set(0, 0xE1, 0xEC, 2);
    set(0, 0xED, 0xED, 4);
    set(0, 0xEE, 0xEF, 2);
    set(0, 0xF0, 0xF0, 6);
    set(0, 0xF1, 0xF3, 5);
    set(0, 0xF4, 0xF4, 7);
    set(1, 0x80, 0xBF, 0);
    set(2, 0x80, 0xBF, 1);
    set(3, 0xA0, 0xBF, 1);
    set(4, 0x80, 0x9F, 1);
    set(5, 0x80, 0xBF, 2);
    set(6, 0x90, 0xBF, 2);
    set(7, 0x80, 0x8F, 2);
    for (int p = 0; p < TextTokens::kPositions; ++p)
      for (int b = 0; b < 256; ++b)
        if (next[p][b] != TextTokens::kDead) bytes[p].push_back({static_cast<uint8_t>(b), next[p][b]});
    for (int b = 0; b < 256; ++b) kind[b] = KindOfByte(static_cast<uint8_t>(b));
    for (int b = 0; b < 256; ++b)
      for (int mask = 0; mask < 256; ++mask) {
        uint8_t out = 0;
        for (int p = 0; p < TextTokens::kPositions; ++p)
          if (next[p][b] != TextTokens::kDead && ((mask >> next[p][b]) & 1)) out |= static_cast<uint8_t>(1u << p);
        before[b][mask] = out;
      }
  }
};

const Tables& T() {
  static const Tables tables;
  return tables;
}

}  // namespace

const uint8_t* TextTokens::NextTable() { return T().next[0].data(); }

std::span<const std::pair<uint8_t, uint8_t>> TextTokens::Bytes(uint8_t p) { return T().bytes[p]; }

TextTokens::Kind TextTokens::KindOf(uint8_t b) { return T().kind[b]; }

TextTokens::TextTokens(const TokenTrie& trie) {
  const Tables& t = T();
  std::span<const TokenTrie::Node> nodes = trie.nodes();
  // Children follow their parent in depth-first order: walking backwards
  // finishes each node before its parent reads it.
  below_.assign(nodes.size(), 0xFF);
  height_.assign(nodes.size(), 0);
  kinds_.assign(nodes.size(), 0);
  for (size_t i = nodes.size(); i-- > 1;) {
    int32_t up = nodes[i].parent;
    below_[up] &= t.before[nodes[i].byte][below_[i]];
    Kind k = t.kind[nodes[i].byte];
    kinds_[up] |= kinds_[i] | (k == kKinds ? 0 : static_cast<KindSet>(1u << k));
    height_[up] = std::max<uint8_t>(height_[up], height_[i] == 255 ? 255 : height_[i] + 1);
  }

  from_boundary_.assign(trie.token_bits().size(), 0);
  std::vector<uint8_t> at_depth = {kBoundary};  // the position after each byte of the current path
  for (size_t i = 1; i < nodes.size(); ++i) {
    const TokenTrie::Node& n = nodes[i];
    at_depth.resize(n.depth);
    uint8_t up = at_depth.back();
    at_depth.push_back(up == kDead ? kDead : t.next[up][n.byte]);
    if (at_depth.back() == kDead) {
      i = static_cast<size_t>(n.subtree_end) - 1;  // nothing below is text from the boundary either
      continue;
    }
    for (int32_t r = n.rank_begin; r < n.rank_here_end; ++r) {
      int32_t id = trie.id_of_rank(r);
      from_boundary_[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
    }
  }
}

}  // namespace llmhost::grammar
