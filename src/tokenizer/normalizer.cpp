#include "tokenizer/normalizer.h"

#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/pattern.h"
#include "tokenizer/precompiled.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace llmhost::tok {
namespace {

constexpr int kMaxDepth = 16;

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm f) : form_(f) {}
  std::string Normalize(std::string_view s) const override { return NormalizeForm(s, form_); }

 private:
  NormalForm form_;
};

class LowercaseNorm : public Normalizer {
 public:
  std::string Normalize(std::string_view s) const override { return Lowercase(s); }
};

class ReplaceNorm : public Normalizer {
 public:
  ReplaceNorm(Pattern p, std::string content) : pattern_(std::move(p)), content_(std::move(content)) {}
  std::string Normalize(std::string_view s) const override { return pattern_.ReplaceAll(s, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class PrependNorm : public Normalizer {
 public:
  explicit PrependNorm(std::string p) : prepend_(std::move(p)) {}
  std::string Normalize(std::string_view s) const override {
    if (s.empty()) return std::string();
    return prepend_ + std::string(s);
  }

 private:
  std::string prepend_;
};

class AppendNorm : public Normalizer {
 public:
  explicit AppendNorm(std::string a) : append_(std::move(a)) {}
  std::string Normalize(std::string_view s) const override {
    if (s.empty()) return std::string();
    return std::string(s) + append_;
  }

 private:
  std::string append_;
};

class StripNorm : public Normalizer {
 public:
  StripNorm(bool left, bool right) : left_(left), right_(right) {}
  std::string Normalize(std::string_view s) const override {
    std::u32string cps = utf8::Decode(s);
    size_t b = 0, e = cps.size();
    if (left_)
      while (b < e && IsWhitespace(cps[b])) ++b;
    if (right_)
      while (e > b && IsWhitespace(cps[e - 1])) --e;
    return utf8::Encode(std::u32string_view(cps).substr(b, e - b));
  }

 private:
  bool left_, right_;
};

// Removes combining marks (no decomposition: pair it with NFD/NFKD).
class StripAccentsNorm : public Normalizer {
 public:
  std::string Normalize(std::string_view s) const override {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    while (pos < s.size()) {
      char32_t c = NextCodePoint(s, &pos);
      if (!IsMark(c)) utf8::Append(&out, c);
    }
    return out;
  }
};

// SentencePiece's "nmt_nfkc" clean-up part: drop control chars, map odd
// spaces to ' '.
class NmtNorm : public Normalizer {
 public:
  std::string Normalize(std::string_view s) const override {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    while (pos < s.size()) {
      char32_t c = NextCodePoint(s, &pos);
      if ((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F ||
          c == 0x8F || c == 0x9F)
        continue;
      if (c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 ||
          (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
          c == 0xFEFF || c == 0xFFFD)
        c = ' ';
      utf8::Append(&out, c);
    }
    return out;
  }
};

class BertNorm : public Normalizer {
 public:
  BertNorm(bool clean, bool chinese, bool strip_accents, bool lower)
      : clean_(clean), chinese_(chinese), strip_accents_(strip_accents), lower_(lower) {}
  std::string Normalize(std::string_view s) const override {
    std::string out;
    out.reserve(s.size() + 8);
    size_t pos = 0;
    while (pos < s.size()) {
      char32_t c = NextCodePoint(s, &pos);
      if (clean_) {
        if (c == 0 || c == 0xFFFD) continue;
        bool ws_ctrl = c == '\t' || c == '\n' || c == '\r';
        if (!ws_ctrl && IsOther(c)) continue;
        if (ws_ctrl || IsWhitespace(c)) c = ' ';
      }
      if (chinese_ && IsCjk(c)) {
        out.push_back(' ');
        utf8::Append(&out, c);
        out.push_back(' ');
        continue;
      }
      utf8::Append(&out, c);
    }
    if (strip_accents_) {
      std::string nfd = NormalizeForm(out, NormalForm::kNFD);
      out.clear();
      size_t p = 0;
      while (p < nfd.size()) {
        char32_t c = NextCodePoint(nfd, &p);
        if (!IsMarkNonspacing(c)) utf8::Append(&out, c);
      }
    }
    if (lower_) out = Lowercase(out);
    return out;
  }

 private:
  bool clean_, chinese_, strip_accents_, lower_;
};

// Maps each byte to the GPT-2 byte-level alphabet.
class ByteLevelNorm : public Normalizer {
 public:
  std::string Normalize(std::string_view s) const override;
};

class SequenceNorm : public Normalizer {
 public:
  explicit SequenceNorm(std::vector<std::unique_ptr<Normalizer>> items) : items_(std::move(items)) {}
  std::string Normalize(std::string_view s) const override {
    std::string cur(s);
    for (const auto& n : items_) cur = n->Normalize(cur);
    return cur;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> items_;
};

}  // namespace

std::string ByteLevelNorm::Normalize(std::string_view s) const { return ByteLevelEncode(s); }

Result<std::unique_ptr<Normalizer>> ParseNormalizer(const Json& j, const std::string& ctx,
                                                    int depth) {
  if (depth > kMaxDepth) return Status::InvalidArgument(ctx + ": nesting too deep");
  ASSIGN_OR_RETURN(std::string type, ComponentType(j, ctx));
  if (type == "NFC") return std::unique_ptr<Normalizer>(new UnicodeForm(NormalForm::kNFC));
  if (type == "NFD") return std::unique_ptr<Normalizer>(new UnicodeForm(NormalForm::kNFD));
  if (type == "NFKC") return std::unique_ptr<Normalizer>(new UnicodeForm(NormalForm::kNFKC));
  if (type == "NFKD") return std::unique_ptr<Normalizer>(new UnicodeForm(NormalForm::kNFKD));
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new LowercaseNorm());
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(new StripAccentsNorm());
  if (type == "Nmt") return std::unique_ptr<Normalizer>(new NmtNorm());
  if (type == "ByteLevel") return std::unique_ptr<Normalizer>(new ByteLevelNorm());
  if (type == "Replace") {
    ASSIGN_OR_RETURN(PatternSpec spec, ReadPattern(j, ctx));
    ASSIGN_OR_RETURN(Pattern pattern, Pattern::FromSpec(spec));
    std::string content;
    RETURN_IF_ERROR(ReadString(j, "content", ctx, &content, /*required=*/true));
    return std::unique_ptr<Normalizer>(new ReplaceNorm(std::move(pattern), std::move(content)));
  }
  if (type == "Prepend") {
    std::string p;
    RETURN_IF_ERROR(ReadString(j, "prepend", ctx, &p, /*required=*/true));
    return std::unique_ptr<Normalizer>(new PrependNorm(std::move(p)));
  }
  if (type == "Append") {
    std::string a;
    RETURN_IF_ERROR(ReadString(j, "append", ctx, &a, /*required=*/true));
    return std::unique_ptr<Normalizer>(new AppendNorm(std::move(a)));
  }
  if (type == "Strip") {
    bool left = true, right = true;
    RETURN_IF_ERROR(ReadBool(j, "strip_left", ctx, &left));
    RETURN_IF_ERROR(ReadBool(j, "strip_right", ctx, &right));
    return std::unique_ptr<Normalizer>(new StripNorm(left, right));
  }
  if (type == "BertNormalizer") {
    bool clean = true, chinese = true, lower = true;
    RETURN_IF_ERROR(ReadBool(j, "clean_text", ctx, &clean));
    RETURN_IF_ERROR(ReadBool(j, "handle_chinese_chars", ctx, &chinese));
    RETURN_IF_ERROR(ReadBool(j, "lowercase", ctx, &lower));
    bool strip = lower;  // null/absent strip_accents follows lowercase
    RETURN_IF_ERROR(ReadBool(j, "strip_accents", ctx, &strip));
    return std::unique_ptr<Normalizer>(new BertNorm(clean, chinese, strip, lower));
  }
  if (type == "Precompiled") {
    std::string charsmap;  // base64; null or "" means identity
    RETURN_IF_ERROR(ReadString(j, "precompiled_charsmap", ctx, &charsmap));
    return MakePrecompiledNormalizer(charsmap, ctx);
  }
  if (type == "Sequence") {
    const Json* list = Field(j, "normalizers");
    if (list == nullptr || !list->is_array())
      return Status::InvalidArgument(ctx + ".normalizers: expected an array");
    std::vector<std::unique_ptr<Normalizer>> items;
    for (size_t i = 0; i < list->size(); ++i) {
      ASSIGN_OR_RETURN(auto n, ParseNormalizer((*list)[i],
                                               ctx + ".normalizers[" + std::to_string(i) + "]",
                                               depth + 1));
      items.push_back(std::move(n));
    }
    return std::unique_ptr<Normalizer>(new SequenceNorm(std::move(items)));
  }
  return Status::NotSupported(ctx + ": normalizer type '" + type + "' is not supported");
}

}  // namespace llmhost::tok
