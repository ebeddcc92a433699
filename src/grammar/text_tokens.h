// TextTokens: which tokens of a vocabulary are plain text, so that a mask
// walk through a state that loops over text (a JSON string's content, free
// text) can take whole subtrees of the token trie at once instead of
// stepping every node (grammar/token_walk.cpp).
//
// "Text" is strict UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF) without control characters (< 0x20), DEL, '"' or '\\': what a
// JSON string holds raw, and a subset of what free-text classes take. A
// token that ends inside a character is text when its bytes so far are.
// Read as an automaton whose kPositions states are the positions inside a
// character (kBoundary: between characters), it gives, per trie node, the
// positions from which every token below the node stays text, which kinds
// of text byte occur below it (Kind: letters, digits, ...) and how deep it
// goes; and the tokens whose bytes are text from a boundary.
//
// Built once per vocabulary (TokenVocab); immutable, thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace llmhost::grammar {

class TokenTrie;

class TextTokens {
 public:
  static constexpr int kPositions = 8;
  static constexpr uint8_t kBoundary = 0;
  static constexpr uint8_t kDead = 0xFF;
  // Kinds of text byte, as bits of a KindSet.
  enum Kind : uint8_t {
    kLower,
    kUpper,
    kDigit,
    kSpace,
    kUnderscore,
    kHyphen,
    kDot,
    kSeparator /* , ; : */,
    kSlash,
    kOtherAscii /* the rest of the printable ASCII but " and \ */,
    kNonAscii,
    kKinds
  };
  using KindSet = uint16_t;
  static constexpr KindSet kAllKinds = (1u << kKinds) - 1;

  explicit TextTokens(const TokenTrie& trie);

  // The position after byte b read at position p, or kDead.
  static uint8_t Next(uint8_t p, uint8_t b) { return NextTable()[p * 256 + b]; }
  // [p * 256 + b]: Next(p, b).
  static const uint8_t* NextTable();
  // The bytes text may take at position p, with the position after each.
  static std::span<const std::pair<uint8_t, uint8_t>> Bytes(uint8_t p);
  // The kind of a text byte (kKinds for bytes that are never text).
  static Kind KindOf(uint8_t b);

  // Bit p set: every token in the subtree of `node`, read from the node's
  // depth on starting at position p, is text (the node's own byte excluded).
  uint8_t below(int32_t node) const { return below_[node]; }
  // The kinds of the text bytes below `node` (the node's own excluded).
  KindSet kinds(int32_t node) const { return kinds_[node]; }
  // The most bytes any token in the subtree of `node` has past the node
  // (255: 255 or more).
  uint8_t height(int32_t node) const { return height_[node]; }
  // The ids of the tokens whose bytes are text from kBoundary, as a mask
  // over the vocabulary (MaskWords words).
  std::span<const uint32_t> from_boundary() const { return from_boundary_; }

 private:
  std::vector<uint8_t> below_;           // [trie node]
  std::vector<KindSet> kinds_;           // [trie node]
  std::vector<uint8_t> height_;          // [trie node]
  std::vector<uint32_t> from_boundary_;  // bit per token id
};

}  // namespace llmhost::grammar
