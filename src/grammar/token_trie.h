// TokenTrie: the vocabulary's token bytes as a trie laid out in depth-first
// order, so that a mask walk visits children by advancing one index and
// skips a dead subtree by jumping to `subtree_end`.
//
// Tokens are ranked by their bytes (sorted order): a node's subtree holds the
// contiguous ranks [rank_begin, rank_end), and those ending exactly at the
// node come first, [rank_begin, rank_here_end). Special tokens and tokens
// without bytes are not in the trie.
//
// Immutable once built; shared by every grammar compiled for the vocabulary.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace llmhost::grammar {

class TokenTrie {
 public:
  struct Node {
    int32_t parent = -1;       // -1 for the root (node 0)
    int32_t subtree_end = 0;   // first node after this one's subtree
    int32_t rank_begin = 0;    // ranks of the tokens in the subtree
    int32_t rank_here_end = 0; // tokens ending at this node: [rank_begin, rank_here_end)
    int32_t rank_end = 0;
    int32_t depth = 0;         // bytes from the root
    uint8_t byte = 0;          // the byte leading to this node
  };

  // `bytes[id]`: what token id adds; ids with skip[id] != 0 are left out.
  TokenTrie(std::span<const std::string> bytes, std::span<const uint8_t> skip);

  std::span<const Node> nodes() const { return nodes_; }
  size_t token_count() const { return id_of_rank_.size(); }
  int32_t id_of_rank(int32_t rank) const { return id_of_rank_[rank]; }
  int32_t rank_of_id(int32_t id) const { return rank_of_id_[id]; }  // -1: not in the trie
  int32_t node_of_rank(int32_t rank) const { return node_of_rank_[rank]; }
  // The ids of every token in the trie, as a mask over the vocabulary
  // (MaskWords(bytes.size()) words).
  std::span<const uint32_t> token_bits() const { return token_bits_; }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> id_of_rank_;
  std::vector<int32_t> rank_of_id_;
  std::vector<int32_t> node_of_rank_;
  std::vector<uint32_t> token_bits_;
};

}  // namespace llmhost::grammar
