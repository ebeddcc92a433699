// Byte-pair encoding as HF tokenizers' BPE model: characters (with optional
// continuing-subword prefix / end-of-word suffix) become symbols, unknown
// characters go to byte-fallback tokens or (fused) unk, then merges are
// applied lowest rank first (leftmost on ties) with a priority queue over a
// linked list of symbols: O(n log n) per piece.
#include <queue>

#include "tokenizer/model.h"
#include "tokenizer/pair_map.h"
#include "tokenizer/unicode.h"
#include "tokenizer/word_cache.h"

namespace llmhost::tok {
namespace {


class BpeModel : public Model {
 public:
  Status Load(const Json& j, const std::string& ctx);
  void Tokenize(std::string_view piece, std::vector<TokenId>* out) const override;

 private:
  void MergeWord(std::string_view w, std::vector<TokenId>* out) const;
  void TokenizeChunk(std::string_view chunk, std::vector<TokenId>* out) const;
  // Picks boundary_ (see below) from the merges, after loading them.
  void FindBoundaryChar(const std::vector<std::pair<std::string, std::string>>& merges);

  // A character c such that every merge whose right part starts with c has a
  // left part made only of c. Then no merge ever spans a position where c
  // follows a different character, so a long piece (SentencePiece BPE has no
  // pre-tokenizer: the whole text is one piece) can be merged chunk by chunk
  // with identical results, and chunks hit the cache. Empty when none fits.
  std::string boundary_;

  PairMap merges_;
  std::optional<std::string> unk_token_;
  std::optional<TokenId> unk_id_;
  std::string prefix_;  // continuing_subword_prefix
  std::string suffix_;  // end_of_word_suffix
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  TokenId byte_ids_[256];  // <0xAB> tokens, -1 when absent
  WordCache cache_;
};

Status BpeModel::Load(const Json& j, const std::string& ctx) {
  std::vector<std::pair<std::string, TokenId>> vocab;
  const Json* v = Field(j, "vocab");
  if (v == nullptr) return Status::InvalidArgument(ctx + ": missing field 'vocab'");
  RETURN_IF_ERROR(ReadVocabObject(*v, ctx + ".vocab", &vocab));
  vocab_.reserve(vocab.size());
  for (auto& [tok, id] : vocab) AddToVocab(std::move(tok), id);

  std::string s;
  if (Field(j, "unk_token") != nullptr) {
    RETURN_IF_ERROR(ReadString(j, "unk_token", ctx, &s));
    unk_token_ = s;
    if (auto id = TokenToId(s)) unk_id_ = *id;
  }
  RETURN_IF_ERROR(ReadString(j, "continuing_subword_prefix", ctx, &prefix_));
  RETURN_IF_ERROR(ReadString(j, "end_of_word_suffix", ctx, &suffix_));
  RETURN_IF_ERROR(ReadBool(j, "fuse_unk", ctx, &fuse_unk_));
  RETURN_IF_ERROR(ReadBool(j, "byte_fallback", ctx, &byte_fallback_));
  RETURN_IF_ERROR(ReadBool(j, "ignore_merges", ctx, &ignore_merges_));
  for (int b = 0; b < 256; ++b) {
    char name[8];
    snprintf(name, sizeof(name), "<0x%02X>", b);
    auto id = TokenToId(name);
    byte_ids_[b] = id ? *id : -1;
  }

  const Json* m = Field(j, "merges");
  if (m == nullptr) return Status::OK();
  if (!m->is_array()) return Status::InvalidArgument(ctx + ".merges: expected an array");
  merges_.Reserve(m->size());
  std::string merged;
  std::vector<std::pair<std::string, std::string>> merge_strings;
  merge_strings.reserve(m->size());
  for (size_t i = 0; i < m->size(); ++i) {
    const Json& e = (*m)[i];
    std::string_view a, b;
    if (e.is_string()) {
      const std::string& line = e.get_ref<const std::string&>();
      size_t sp = line.find(' ');
      if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
        return Status::InvalidArgument(ctx + ".merges[" + std::to_string(i) +
                                       "]: expected \"a b\", got \"" + line + "\"");
      a = std::string_view(line).substr(0, sp);
      b = std::string_view(line).substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      a = e[0].get_ref<const std::string&>();
      b = e[1].get_ref<const std::string&>();
    } else {
      return Status::InvalidArgument(ctx + ".merges[" + std::to_string(i) +
                                     "]: expected \"a b\" or [\"a\", \"b\"]");
    }
    auto ia = TokenToId(a), ib = TokenToId(b);
    if (!ia || !ib)
      return Status::InvalidArgument(ctx + ".merges[" + std::to_string(i) + "]: token '" +
                                     std::string(!ia ? a : b) + "' is not in the vocabulary");
    // The merged token drops b's continuing-subword prefix.
    std::string_view b_body = b;
    if (!prefix_.empty() && b_body.substr(0, prefix_.size()) == prefix_)
      b_body.remove_prefix(prefix_.size());
    merged.assign(a);
    merged.append(b_body);
    auto inew = TokenToId(merged);
    if (!inew)
      return Status::InvalidArgument(ctx + ".merges[" + std::to_string(i) + "]: merged token '" +
                                     merged + "' is not in the vocabulary");
    merges_.Put(PairMap::Key(*ia, *ib), MergeInfo{static_cast<uint32_t>(i), *inew});
    merge_strings.emplace_back(a, b);
  }
  if (prefix_.empty() && suffix_.empty()) FindBoundaryChar(merge_strings);
  return Status::OK();
}

void BpeModel::FindBoundaryChar(const std::vector<std::pair<std::string, std::string>>& merges) {
  for (const char* c : {"\xE2\x96\x81", " ", "\xC4\xA0"}) {  // U+2581, space, U+0120
    std::string_view cv(c);
    if (!TokenToId(cv)) continue;
    bool ok = true;
    for (const auto& [a, b] : merges) {
      if (b.compare(0, cv.size(), cv) != 0) continue;
      for (size_t k = 0; ok && k < a.size(); k += cv.size())
        ok = a.compare(k, cv.size(), cv) == 0;
      if (!ok || a.size() % cv.size() != 0) {
        ok = false;
        break;
      }
    }
    if (ok) {
      boundary_ = cv;
      return;
    }
  }
}

void BpeModel::Tokenize(std::string_view piece, std::vector<TokenId>* out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (auto id = TokenToId(piece)) {
      out->push_back(*id);
      return;
    }
  }
  if (boundary_.empty() || piece.size() <= WordCache::kMaxKeyBytes) {
    TokenizeChunk(piece, out);
    return;
  }
  // Split before each boundary character that follows another character.
  const std::string& c = boundary_;
  size_t start = 0;
  size_t pos = piece.find(c, 1);
  while (pos != std::string_view::npos) {
    bool after_c = pos >= c.size() && piece.compare(pos - c.size(), c.size(), c) == 0;
    if (!after_c) {
      TokenizeChunk(piece.substr(start, pos - start), out);
      start = pos;
    }
    pos = piece.find(c, pos + c.size());
  }
  TokenizeChunk(piece.substr(start), out);
}

void BpeModel::TokenizeChunk(std::string_view chunk, std::vector<TokenId>* out) const {
  if (cache_.Get(chunk, out)) return;
  size_t before = out->size();
  MergeWord(chunk, out);
  cache_.Put(chunk, out->data() + before, out->size() - before);
}

void BpeModel::MergeWord(std::string_view w, std::vector<TokenId>* out) const {
  struct Symbol {
    TokenId id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Symbol> sym;
  sym.reserve(w.size());
  auto add = [&](TokenId id) {
    int32_t n = static_cast<int32_t>(sym.size());
    sym.push_back(Symbol{id, n - 1, n + 1, true});
  };
  TokenId pending_unk = -1;  // an unk not yet emitted (fuse_unk grows it)
  std::string s;
  size_t pos = 0;
  while (pos < w.size()) {
    size_t start = pos;
    NextCodePoint(w, &pos);
    bool is_first = start == 0, is_last = pos == w.size();
    std::string_view ch = w.substr(start, pos - start);
    s.clear();
    if (!is_first) s += prefix_;
    s += ch;
    if (is_last) s += suffix_;
    if (auto id = TokenToId(s)) {
      if (pending_unk >= 0) {
        add(pending_unk);
        pending_unk = -1;
      }
      add(*id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : s) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        // As HF, byte tokens do not flush a pending unk (it follows them).
        for (char c : s) add(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !fuse_unk_) add(pending_unk);
      pending_unk = *unk_id_;
    }
  }
  if (pending_unk >= 0) add(pending_unk);
  if (!sym.empty()) sym.back().next = -1;

  struct Cand {
    uint32_t rank;
    int32_t pos;
    TokenId new_id;
    bool operator<(const Cand& o) const {  // max-heap: lowest rank, then leftmost, on top
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  auto lookup = [&](TokenId a, TokenId b) -> const MergeInfo* {
    return merges_.Get(PairMap::Key(a, b));
  };
  std::vector<Cand> heap_storage;
  heap_storage.reserve(sym.size());
  std::priority_queue<Cand> queue(std::less<Cand>(), std::move(heap_storage));
  for (size_t i = 0; i + 1 < sym.size(); ++i)
    if (const MergeInfo* m = lookup(sym[i].id, sym[i + 1].id))
      queue.push(Cand{m->rank, static_cast<int32_t>(i), m->new_id});

  while (!queue.empty()) {
    Cand top = queue.top();
    queue.pop();
    Symbol& cur = sym[top.pos];
    if (!cur.alive || cur.next < 0) continue;
    Symbol& right = sym[cur.next];
    const MergeInfo* m = lookup(cur.id, right.id);
    if (m == nullptr || m->new_id != top.new_id) continue;  // stale entry
    cur.id = top.new_id;
    right.alive = false;
    cur.next = right.next;
    if (cur.next >= 0) sym[cur.next].prev = top.pos;
    if (cur.prev >= 0)
      if (const MergeInfo* pm = lookup(sym[cur.prev].id, cur.id))
        queue.push(Cand{pm->rank, cur.prev, pm->new_id});
    if (cur.next >= 0)
      if (const MergeInfo* nm = lookup(cur.id, sym[cur.next].id))
        queue.push(Cand{nm->rank, top.pos, nm->new_id});
  }
  for (const Symbol& sy : sym)
    if (sy.alive) out->push_back(sy.id);
}

}  // namespace

Result<std::unique_ptr<Model>> ParseBpe(const Json& j, const std::string& ctx) {
  auto model = std::make_unique<BpeModel>();
  RETURN_IF_ERROR(model->Load(j, ctx));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace llmhost::tok
