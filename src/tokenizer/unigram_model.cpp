// Unigram (SentencePiece): Viterbi over a byte trie of the vocabulary, scores
// are log-probabilities; characters no token covers score min_score - 10 and
// become unk (consecutive unks fused). Linear in length x longest token.
#include <algorithm>
#include <array>
#include <cmath>

#include "tokenizer/model.h"
#include "tokenizer/pattern.h"
#include "tokenizer/unicode.h"
#include "tokenizer/word_cache.h"
#include "util/utf8.h"

namespace llmhost::tok {
namespace {

constexpr double kUnkPenalty = 10.0;

// First-child / next-sibling byte trie; the root's children are indexed.
class ByteTrie {
 public:
  ByteTrie() { nodes_.push_back(Node{}); root_.fill(-1); }
  void Insert(std::string_view key, TokenId id) {
    if (key.empty()) return;
    int32_t n = Child(-1, static_cast<uint8_t>(key[0]), true);
    for (size_t i = 1; i < key.size(); ++i) n = Child(n, static_cast<uint8_t>(key[i]), true);
    nodes_[n].id = id;
  }
  // Calls fn(length, id) for every vocabulary key that prefixes s.
  template <typename Fn>
  void CommonPrefixes(std::string_view s, Fn&& fn) const {
    if (s.empty()) return;
    int32_t n = root_[static_cast<uint8_t>(s[0])];
    for (size_t i = 1; n >= 0; ++i) {
      if (nodes_[n].id >= 0) fn(i, nodes_[n].id);
      if (i >= s.size()) break;
      n = Child(n, static_cast<uint8_t>(s[i]));
    }
  }

 private:
  struct Node {
    int32_t first_child = -1, next_sibling = -1;
    TokenId id = -1;
    uint8_t byte = 0;
  };
  int32_t Child(int32_t parent, uint8_t b, bool create) {
    int32_t last = -1;  // the last sibling, to link a new node after
    if (parent < 0) {
      if (root_[b] >= 0) return root_[b];
    } else {
      for (int32_t c = nodes_[parent].first_child; c >= 0; c = nodes_[c].next_sibling) {
        if (nodes_[c].byte == b) return c;
        last = c;
      }
    }
    if (!create) return -1;
    int32_t idx = static_cast<int32_t>(nodes_.size());
    Node node;
    node.byte = b;
    nodes_.push_back(node);
    if (parent < 0) root_[b] = idx;
    else if (last < 0) nodes_[parent].first_child = idx;
    else nodes_[last].next_sibling = idx;
    return idx;
  }
  int32_t Child(int32_t parent, uint8_t b) const {
    for (int32_t c = nodes_[parent].first_child; c >= 0; c = nodes_[c].next_sibling)
      if (nodes_[c].byte == b) return c;
    return -1;
  }
  std::vector<Node> nodes_;
  std::array<int32_t, 256> root_;
};

class UnigramModel : public Model {
 public:
  Status Load(const Json& j, const std::string& ctx);
  void Tokenize(std::string_view piece, std::vector<TokenId>* out) const override;

 private:
  void Viterbi(std::string_view s, std::vector<TokenId>* out) const;

  std::vector<double> scores_;
  ByteTrie trie_;
  std::optional<TokenId> unk_id_;
  bool byte_fallback_ = false;
  double min_score_ = 0.0;
  TokenId byte_ids_[256];
  WordCache cache_;
};

Status UnigramModel::Load(const Json& j, const std::string& ctx) {
  const Json* v = Field(j, "vocab");
  if (v == nullptr || !v->is_array())
    return Status::InvalidArgument(ctx + ".vocab: expected an array of [token, score]");
  if (static_cast<int64_t>(v->size()) > kMaxTokenId)
    return Status::InvalidArgument(ctx + ".vocab: too many entries");
  scores_.reserve(v->size());
  min_score_ = INFINITY;
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& e = (*v)[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
      return Status::InvalidArgument(ctx + ".vocab[" + std::to_string(i) +
                                     "]: expected [token, score]");
    double score = e[1].get<double>();
    if (!std::isfinite(score))
      return Status::InvalidArgument(ctx + ".vocab[" + std::to_string(i) + "]: bad score");
    const std::string& tok = e[0].get_ref<const std::string&>();
    // A duplicated token resolves to its last id everywhere, as in HF.
    trie_.Insert(tok, static_cast<TokenId>(i));
    AddToVocab(tok, static_cast<TokenId>(i));
    scores_.push_back(score);
    min_score_ = std::min(min_score_, score);
  }
  if (scores_.empty()) min_score_ = 0.0;
  int64_t unk = -1;
  RETURN_IF_ERROR(ReadInt(j, "unk_id", ctx, &unk));
  if (Field(j, "unk_id") != nullptr) {
    if (unk < 0 || static_cast<size_t>(unk) >= scores_.size())
      return Status::InvalidArgument(ctx + ".unk_id: " + std::to_string(unk) +
                                     " is outside the vocabulary");
    unk_id_ = static_cast<TokenId>(unk);
  }
  RETURN_IF_ERROR(ReadBool(j, "byte_fallback", ctx, &byte_fallback_));
  for (int b = 0; b < 256; ++b) {
    char name[8];
    snprintf(name, sizeof(name), "<0x%02X>", b);
    auto id = TokenToId(name);
    byte_ids_[b] = id ? *id : -1;
  }
  return Status::OK();
}

void UnigramModel::Tokenize(std::string_view piece, std::vector<TokenId>* out) const {
  if (piece.empty()) return;
  if (cache_.Get(piece, out)) return;
  size_t before = out->size();
  Viterbi(piece, out);
  cache_.Put(piece, out->data() + before, out->size() - before);
}

void UnigramModel::Viterbi(std::string_view s, std::vector<TokenId>* out) const {
  struct Node {
    TokenId id = -1;
    double score = 0.0;
    int64_t start = -1;  // -1: not reached yet
  };
  const size_t n = s.size();
  std::vector<Node> best(n + 1);
  best[0].start = 0;
  const double unk_score = min_score_ - kUnkPenalty;
  size_t pos = 0;
  while (pos < n) {
    size_t next = pos;
    NextCodePoint(s, &next);
    size_t char_len = next - pos;
    double base = best[pos].score;
    bool has_single = false;
    trie_.CommonPrefixes(s.substr(pos), [&](size_t len, TokenId id) {
      Node& t = best[pos + len];
      double cand = base + scores_[id];
      if (t.start < 0 || cand > t.score) {
        t.score = cand;
        t.start = static_cast<int64_t>(pos);
        t.id = id;
      }
      if (len == char_len) has_single = true;
    });
    if (!has_single) {
      Node& t = best[next];
      double cand = base + unk_score;
      if (t.start < 0 || cand > t.score) {
        t.score = cand;
        t.start = static_cast<int64_t>(pos);
        t.id = unk_id_ ? *unk_id_ : -1;
      }
    }
    pos = next;
  }
  // Walk back; consecutive unk pieces fuse into one (HF fuse_unk).
  std::vector<Range> segs;  // reversed
  bool prev_unk = false;
  for (size_t end = n; end > 0;) {
    const Node& node = best[end];
    if (node.start < 0) break;  // unreachable: every character gets a node
    size_t start = static_cast<size_t>(node.start);
    bool is_unk = unk_id_ && node.id == *unk_id_;
    if (is_unk && prev_unk) segs.back().first = start;
    else segs.emplace_back(start, end);
    prev_unk = is_unk;
    end = start;
  }
  for (size_t i = segs.size(); i-- > 0;) {
    std::string_view piece = s.substr(segs[i].first, segs[i].second - segs[i].first);
    if (auto id = TokenToId(piece)) {
      out->push_back(*id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : piece) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : piece) out->push_back(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_) out->push_back(*unk_id_);
  }
}

}  // namespace

Result<std::unique_ptr<Model>> ParseUnigram(const Json& j, const std::string& ctx) {
  auto model = std::make_unique<UnigramModel>();
  RETURN_IF_ERROR(model->Load(j, ctx));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace llmhost::tok
