#include "grammar/token_trie.h"

#include <algorithm>

namespace llmhost::grammar {

TokenTrie::TokenTrie(std::span<const std::string> bytes, std::span<const uint8_t> skip) {
  rank_of_id_.assign(bytes.size(), -1);
  for (size_t id = 0; id < bytes.size(); ++id)
    if (!skip[id] && !bytes[id].empty()) id_of_rank_.push_back(static_cast<int32_t>(id));
  std::stable_sort(id_of_rank_.begin(), id_of_rank_.end(),
                   [&](int32_t a, int32_t b) { return bytes[a] < bytes[b]; });
  node_of_rank_.resize(id_of_rank_.size());

  nodes_.push_back(Node{});  // the root
  std::vector<int32_t> path = {0};  // path[d]: the node at depth d
  std::string_view prev;
  auto close_deepest = [&](int32_t rank) {
    Node& n = nodes_[path.back()];
    n.subtree_end = static_cast<int32_t>(nodes_.size());
    n.rank_end = rank;
    path.pop_back();
  };
  for (size_t rank = 0; rank < id_of_rank_.size(); ++rank) {
    int32_t r = static_cast<int32_t>(rank);
    rank_of_id_[id_of_rank_[rank]] = r;
    std::string_view cur = bytes[id_of_rank_[rank]];
    size_t lcp = 0;
    while (lcp < cur.size() && lcp < prev.size() && cur[lcp] == prev[lcp]) ++lcp;
    while (path.size() > lcp + 1) close_deepest(r);
    for (size_t d = lcp; d < cur.size(); ++d) {
      Node n;
      n.parent = path.back();
      n.rank_begin = n.rank_here_end = r;
      n.depth = static_cast<int32_t>(d + 1);
      n.byte = static_cast<uint8_t>(cur[d]);
      nodes_.push_back(n);
      path.push_back(static_cast<int32_t>(nodes_.size() - 1));
    }
    // Sorted order puts the tokens that end at a node (duplicates included)
    // right after it is reached.
    nodes_[path.back()].rank_here_end = r + 1;
    node_of_rank_[rank] = path.back();
    prev = cur;
  }
  int32_t total = static_cast<int32_t>(id_of_rank_.size());
  while (!path.empty()) close_deepest(total);
  token_bits_.assign((bytes.size() + 31) / 32, 0);
  for (int32_t id : id_of_rank_) token_bits_[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
}

}  // namespace llmhost::grammar
