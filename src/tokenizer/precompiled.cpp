// SentencePiece's precompiled normalizer, as HF tokenizers applies it.
//
// Blob layout (little endian): u32 trie_bytes, then trie_bytes/4 u32 units of
// a darts-clone double-array trie over UTF-8 byte keys, then the replacement
// strings, each NUL-terminated; a key's trie value is the byte offset of its
// replacement. HF walks extended grapheme clusters: a cluster shorter than 6
// bytes is replaced whole when any prefix of it is a key (the shortest key
// found wins, as in HF); otherwise each character is looked up on its own.
#include "tokenizer/precompiled.h"

#include <unicode/ubrk.h>
#include <unicode/utext.h>

#include <cstring>
#include <vector>

#include "util/utf8.h"

namespace llmhost::tok {
namespace {

Result<std::string> DecodeBase64(std::string_view in, const std::string& ctx) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    int v = value(c);
    if (v < 0) return Status::InvalidArgument(ctx + ".precompiled_charsmap: invalid base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

class PrecompiledNorm : public Normalizer {
 public:
  PrecompiledNorm(std::vector<uint32_t> units, std::string replacements)
      : units_(std::move(units)), replacements_(std::move(replacements)) {}

  std::string Normalize(std::string_view s) const override {
    std::string out;
    out.reserve(s.size());
    UErrorCode err = U_ZERO_ERROR;
    UText* text = utext_openUTF8(nullptr, s.data(), static_cast<int64_t>(s.size()), &err);
    UBreakIterator* bi = ubrk_open(UBRK_CHARACTER, "", nullptr, 0, &err);
    if (U_SUCCESS(err)) ubrk_setUText(bi, text, &err);
    if (U_FAILURE(err)) {  // cannot segment: per character only
      if (bi) ubrk_close(bi);
      if (text) utext_close(text);
      AppendPerChar(s, &out);
      return out;
    }
    int32_t start = ubrk_first(bi);
    for (int32_t end = ubrk_next(bi); end != UBRK_DONE; start = end, end = ubrk_next(bi)) {
      std::string_view g = s.substr(static_cast<size_t>(start), static_cast<size_t>(end - start));
      if (g.size() < 6) {
        if (const char* rep = Lookup(g)) {
          out += rep;
          continue;
        }
      }
      AppendPerChar(g, &out);
    }
    ubrk_close(bi);
    utext_close(text);
    return out;
  }

 private:
  void AppendPerChar(std::string_view g, std::string* out) const {
    size_t pos = 0;
    while (pos < g.size()) {
      size_t start = pos;
      utf8::DecodeOne(g, &pos);
      std::string_view ch = g.substr(start, pos - start);
      if (const char* rep = Lookup(ch)) *out += rep;
      else out->append(ch);
    }
  }

  // The replacement of the shortest key that prefixes `key`, or nullptr.
  // darts-clone unit layout: bit 8 has_leaf, label in bits 0-7 (+ bit 31),
  // offset in bits 10-31 (shifted by 8 more when bit 9 is set).
  const char* Lookup(std::string_view key) const {
    auto offset = [](uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); };
    if (units_.empty()) return nullptr;
    size_t node = offset(units_[0]);
    for (char ch : key) {
      uint8_t c = static_cast<uint8_t>(ch);
      if (c == 0) return nullptr;
      node ^= c;
      if (node >= units_.size()) return nullptr;
      uint32_t unit = units_[node];
      if ((unit & ((1u << 31) | 0xFF)) != c) return nullptr;
      node ^= offset(unit);
      if (node >= units_.size()) return nullptr;
      if ((unit >> 8) & 1) {
        size_t value = units_[node] & ((1u << 31) - 1);
        if (value >= replacements_.size()) return nullptr;
        if ((static_cast<uint8_t>(replacements_[value]) & 0xC0) == 0x80) return nullptr;  // mid-character
        return replacements_.c_str() + value;  // NUL-terminated in the blob
      }
    }
    return nullptr;
  }

  std::vector<uint32_t> units_;
  std::string replacements_;  // NUL-separated replacement strings
};

class IdentityNorm : public Normalizer {
 public:
  std::string Normalize(std::string_view s) const override { return std::string(s); }
};

}  // namespace

Result<std::unique_ptr<Normalizer>> MakePrecompiledNormalizer(const std::string& charsmap_b64,
                                                              const std::string& ctx) {
  if (charsmap_b64.empty()) return std::unique_ptr<Normalizer>(new IdentityNorm());
  ASSIGN_OR_RETURN(std::string blob, DecodeBase64(charsmap_b64, ctx));
  if (blob.size() < 4) return Status::InvalidArgument(ctx + ".precompiled_charsmap: too short");
  uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8) | static_cast<uint8_t>(blob[i]);
  if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4)
    return Status::InvalidArgument(ctx + ".precompiled_charsmap: trie size " +
                                   std::to_string(trie_bytes) + " does not fit the blob");
  std::vector<uint32_t> units(trie_bytes / 4);
  for (size_t i = 0; i < units.size(); ++i) {
    const auto* p = reinterpret_cast<const uint8_t*>(blob.data()) + 4 + 4 * i;
    units[i] = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
  }
  std::string replacements = blob.substr(4 + trie_bytes);
  if (!utf8::IsValid(replacements))
    return Status::InvalidArgument(ctx + ".precompiled_charsmap: replacements are not UTF-8");
  return std::unique_ptr<Normalizer>(new PrecompiledNorm(std::move(units), std::move(replacements)));
}

}  // namespace llmhost::tok
