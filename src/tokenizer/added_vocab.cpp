#include "tokenizer/added_vocab.h"

#include <algorithm>

#include "tokenizer/model.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace llmhost::tok {
namespace {

// A "word character" for single_word: alphanumeric or '_' (HF's \w check).
bool IsWordChar(char32_t c) { return c == '_' || IsAlphanumeric(c); }

char32_t LastCodePoint(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && (static_cast<uint8_t>(s[i - 1]) & 0xC0) == 0x80) --i;
  if (i > 0) --i;
  size_t pos = i;
  return NextCodePoint(s, &pos);
}

}  // namespace

void AddedMatcher::Build(const std::vector<std::string>& contents,
                         const std::vector<const AddedToken*>& tokens) {
  nodes_.assign(1, Node{});
  first_byte_.fill(false);
  tokens_ = tokens;
  for (size_t t = 0; t < contents.size(); ++t) {
    const std::string& c = contents[t];
    if (c.empty()) continue;
    first_byte_[static_cast<uint8_t>(c[0])] = true;
    int32_t n = 0;
    for (char ch : c) {
      uint8_t b = static_cast<uint8_t>(ch);
      auto& next = nodes_[n].next;
      auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(b, int32_t{-1}));
      if (it != next.end() && it->first == b) {
        n = it->second;
      } else {
        int32_t idx = static_cast<int32_t>(nodes_.size());
        next.insert(it, {b, idx});
        nodes_.push_back(Node{});
        n = idx;
      }
    }
    if (nodes_[n].token < 0) nodes_[n].token = static_cast<int32_t>(t);  // first wins on duplicates
  }
}

int AddedMatcher::LongestAt(std::string_view text, size_t pos, size_t* len) const {
  int best = -1;
  int32_t n = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    uint8_t b = static_cast<uint8_t>(text[i]);
    const auto& next = nodes_[n].next;
    auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(b, int32_t{-1}));
    if (it == next.end() || it->first != b) break;
    n = it->second;
    if (nodes_[n].token >= 0) {
      best = nodes_[n].token;
      *len = i + 1 - pos;
    }
  }
  return best;
}

std::vector<Segment> AddedMatcher::Split(std::string_view text) const {
  std::vector<Segment> out;
  size_t start_offset = 0;  // end of the previous kept match
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    size_t len = 0;
    int t = LongestAt(text, pos, &len);
    if (t < 0) {
      ++pos;
      continue;
    }
    const AddedToken& tok = *tokens_[t];
    size_t start = pos, stop = pos + len;
    pos = stop;  // the automaton moves past every match, kept or not
    if (tok.single_word) {
      bool start_ok = start == 0 || !IsWordChar(LastCodePoint(text.substr(0, start)));
      size_t p = stop;
      bool stop_ok = stop == text.size() || !IsWordChar(NextCodePoint(text, &p));
      if (!start_ok || !stop_ok) continue;
    }
    if (tok.lstrip) {
      size_t s = start;
      while (s > 0) {
        size_t b = s - 1;
        while (b > 0 && (static_cast<uint8_t>(text[b]) & 0xC0) == 0x80) --b;
        size_t q = b;
        if (!IsWhitespace(NextCodePoint(text, &q))) break;
        s = b;
      }
      start = std::max(s, start_offset);
    }
    if (tok.rstrip) {
      size_t e = stop;
      while (e < text.size()) {
        size_t q = e;
        if (!IsWhitespace(NextCodePoint(text, &q))) break;
        e = q;
      }
      stop = e;
      pos = std::max(pos, stop);
    }
    if (start_offset < start) out.push_back(Segment{start_offset, start, -1});
    out.push_back(Segment{start, stop, tok.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back(Segment{start_offset, text.size(), -1});
  return out;
}

Result<std::vector<AddedToken>> ParseAddedTokens(const Json& j, const std::string& ctx) {
  std::vector<AddedToken> out;
  if (!j.is_array()) return Status::InvalidArgument(ctx + ": expected an array");
  for (size_t i = 0; i < j.size(); ++i) {
    std::string c = ctx + "[" + std::to_string(i) + "]";
    const Json& e = j[i];
    if (!e.is_object()) return Status::InvalidArgument(c + ": expected an object");
    AddedToken t;
    int64_t id = -1;
    RETURN_IF_ERROR(ReadInt(e, "id", c, &id, /*required=*/true));
    if (id < 0 || id > kMaxTokenId)
      return Status::InvalidArgument(c + ".id: " + std::to_string(id) + " out of range");
    t.id = static_cast<TokenId>(id);
    RETURN_IF_ERROR(ReadString(e, "content", c, &t.content, /*required=*/true));
    RETURN_IF_ERROR(ReadBool(e, "single_word", c, &t.single_word));
    RETURN_IF_ERROR(ReadBool(e, "lstrip", c, &t.lstrip));
    RETURN_IF_ERROR(ReadBool(e, "rstrip", c, &t.rstrip));
    RETURN_IF_ERROR(ReadBool(e, "special", c, &t.special));
    t.normalized = !t.special;  // HF's default when the field is absent
    RETURN_IF_ERROR(ReadBool(e, "normalized", c, &t.normalized));
    if (!utf8::IsValid(t.content)) return Status::InvalidArgument(c + ".content: invalid UTF-8");
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace llmhost::tok
