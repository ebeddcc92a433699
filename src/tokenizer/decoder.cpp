#include "tokenizer/decoder.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/pattern.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace llmhost::tok {
namespace {

constexpr int kMaxDepth = 16;
using Tokens = std::vector<std::string>;

// Bytes -> text, invalid sequences as U+FFFD (Rust's from_utf8_lossy
// replaces each maximal invalid prefix; utf8::DecodeOne does so per byte,
// which differs only for truncated multi-byte sequences; see LossyUtf8).
std::string LossyUtf8(std::string_view bytes) {
  if (utf8::IsValid(bytes)) return std::string(bytes);
  // from_utf8_lossy: a truncated but otherwise valid prefix of a multi-byte
  // sequence yields one U+FFFD for the whole prefix.
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    size_t pos = i;
    char32_t c = utf8::DecodeOne(bytes, &pos);
    if (c != utf8::kReplacement || (pos - i == 3 && bytes.substr(i, 3) == "\xEF\xBF\xBD")) {
      out.append(bytes.substr(i, pos - i));
      i = pos;
      continue;
    }
    // Invalid: skip the longest prefix of a valid sequence (at least 1 byte).
    uint8_t b0 = static_cast<uint8_t>(bytes[i]);
    size_t len = utf8::SequenceLength(b0);
    size_t skip = 1;
    if (len > 1 && b0 >= 0xC2 && b0 <= 0xF4) {
      for (size_t k = 1; k < len && i + k < bytes.size(); ++k) {
        uint8_t b = static_cast<uint8_t>(bytes[i + k]);
        uint8_t lo = 0x80, hi = 0xBF;
        if (k == 1) {  // second-byte limits per RFC 3629
          if (b0 == 0xE0) lo = 0xA0;
          else if (b0 == 0xED) hi = 0x9F;
          else if (b0 == 0xF0) lo = 0x90;
          else if (b0 == 0xF4) hi = 0x8F;
        }
        if (b < lo || b > hi) break;
        skip = k + 1;
      }
    }
    utf8::Append(&out, utf8::kReplacement);
    i += skip;
  }
  return out;
}

class ByteLevelDec : public Decoder {
 public:
  Tokens DecodeChain(Tokens tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      size_t mark = bytes.size();
      if (!ByteLevelDecode(t, &bytes)) {
        bytes.resize(mark);
        bytes += t;  // not byte-level text: keep its UTF-8 as is
      }
    }
    return {LossyUtf8(bytes)};
  }
  std::string TokenBytes(std::string token, bool* joined) const override {
    *joined = true;
    std::string bytes;
    return ByteLevelDecode(token, &bytes) ? bytes : token;
  }
};

class MetaspaceDec : public Decoder {
 public:
  MetaspaceDec(std::string rep, bool prepend) : rep_(std::move(rep)), prepend_(prepend) {}
  Tokens DecodeChain(Tokens tokens) const override {
    Pattern p = Pattern::Literal(rep_);
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = p.ReplaceAll(tokens[i], (i == 0 && prepend_) ? "" : " ");
    return tokens;
  }
  std::string TokenBytes(std::string token, bool*) const override {
    return Pattern::Literal(rep_).ReplaceAll(token, " ");
  }

 private:
  std::string rep_;
  bool prepend_;
};

// <0xAB> tokens -> bytes; runs of them become text when valid UTF-8, else
// one U+FFFD per byte token.
class ByteFallbackDec : public Decoder {
 public:
  Tokens DecodeChain(Tokens tokens) const override {
    Tokens out;
    std::string pending;
    size_t pending_count = 0;
    auto flush = [&]() {
      if (pending_count == 0) return;
      if (utf8::IsValid(pending)) {
        out.push_back(pending);
      } else {
        for (size_t k = 0; k < pending_count; ++k) out.push_back("\xEF\xBF\xBD");
      }
      pending.clear();
      pending_count = 0;
    };
    for (std::string& t : tokens) {
      int byte = ParseByteToken(t);
      if (byte >= 0) {
        pending.push_back(static_cast<char>(byte));
        ++pending_count;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    return out;
  }
  std::string TokenBytes(std::string token, bool*) const override {
    int byte = ParseByteToken(token);
    return byte >= 0 ? std::string(1, static_cast<char>(byte)) : token;
  }

 private:
  static int HexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }
  static int ParseByteToken(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    int hi = HexDigit(t[3]), lo = HexDigit(t[4]);
    if (hi < 0 || lo < 0) return -1;
    return hi * 16 + lo;
  }
};

class FuseDec : public Decoder {
 public:
  Tokens DecodeChain(Tokens tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    return {all};
  }
  std::string TokenBytes(std::string token, bool* joined) const override {
    *joined = true;
    return token;
  }
};

// Removes up to `start` leading and `stop` trailing `content` characters.
class StripDec : public Decoder {
 public:
  StripDec(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  Tokens DecodeChain(Tokens tokens) const override {
    for (std::string& t : tokens) {
      std::u32string cps = utf8::Decode(t);
      size_t b = 0, e = cps.size();
      for (size_t k = 0; k < start_ && b < e && cps[b] == content_; ++k) ++b;
      for (size_t k = 0; k < stop_ && e > b && cps[e - 1] == content_; ++k) --e;
      t = utf8::Encode(std::u32string_view(cps).substr(b, e - b));
    }
    return tokens;
  }
  std::string TokenBytes(std::string token, bool* joined) const override {
    if (*joined) return token;  // only the ends of the whole text are stripped
    return DecodeChain({std::move(token)})[0];
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDec : public Decoder {
 public:
  ReplaceDec(Pattern p, std::string content) : pattern_(std::move(p)), content_(std::move(content)) {}
  Tokens DecodeChain(Tokens tokens) const override {
    for (std::string& t : tokens) t = pattern_.ReplaceAll(t, content_);
    return tokens;
  }
  std::string TokenBytes(std::string token, bool*) const override { return pattern_.ReplaceAll(token, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

std::string ReplaceAllLiteral(std::string s, std::string_view from, std::string_view to) {
  return Pattern::Literal(std::string(from)).ReplaceAll(s, to);
}

// BERT's clean-up of spaces before punctuation and contractions.
std::string Cleanup(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},           {" ,", ","},   {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"},
      {" 're", "'re"}};
  for (const auto& [from, to] : kRules) s = ReplaceAllLiteral(std::move(s), from, to);
  return s;
}

class WordPieceDec : public Decoder {
 public:
  WordPieceDec(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  Tokens DecodeChain(Tokens tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        // (An empty prefix always "matches": then no space is added.)
        if (t.compare(0, prefix_.size(), prefix_) == 0) t.erase(0, prefix_.size());
        else t.insert(0, 1, ' ');
      }
      if (cleanup_) t = Cleanup(std::move(t));
    }
    return tokens;
  }
  std::string TokenBytes(std::string token, bool*) const override {
    // A token after the first: its prefix marks a continuation, else a space.
    return DecodeChain({"", std::move(token)})[1];
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

// Each token's `suffix` marks a word end: it becomes a space (none at the end).
class BpeDec : public Decoder {
 public:
  explicit BpeDec(std::string suffix) : suffix_(std::move(suffix)) {}
  Tokens DecodeChain(Tokens tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = ReplaceAllLiteral(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    return tokens;
  }
  std::string TokenBytes(std::string token, bool*) const override {
    return ReplaceAllLiteral(std::move(token), suffix_, " ");
  }

 private:
  std::string suffix_;
};

class CtcDec : public Decoder {
 public:
  CtcDec(std::string pad, std::string delim, bool cleanup)
      : pad_(std::move(pad)), delim_(std::move(delim)), cleanup_(cleanup) {}
  Tokens DecodeChain(Tokens tokens) const override {
    Tokens out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 && tokens[i] == tokens[i - 1]) continue;  // collapse repeats
      std::string t = ReplaceAllLiteral(tokens[i], pad_, "");
      if (cleanup_) t = ReplaceAllLiteral(Cleanup(std::move(t)), delim_, " ");
      if (!t.empty()) out.push_back(std::move(t));
    }
    return out;
  }
  std::string TokenBytes(std::string token, bool*) const override {
    Tokens one = DecodeChain({std::move(token)});
    return one.empty() ? std::string() : one[0];
  }

 private:
  std::string pad_, delim_;
  bool cleanup_;
};

class SequenceDec : public Decoder {
 public:
  explicit SequenceDec(std::vector<std::unique_ptr<Decoder>> items) : items_(std::move(items)) {}
  Tokens DecodeChain(Tokens tokens) const override {
    for (const auto& d : items_) tokens = d->DecodeChain(std::move(tokens));
    return tokens;
  }
  std::string TokenBytes(std::string token, bool* joined) const override {
    for (const auto& d : items_) token = d->TokenBytes(std::move(token), joined);
    return token;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> items_;
};

Result<char32_t> ReadOneChar(const Json& j, const char* key, const std::string& ctx,
                             const char* fallback) {
  std::string s = fallback;
  RETURN_IF_ERROR(ReadString(j, key, ctx, &s));
  size_t pos = 0;
  if (s.empty() || !utf8::IsValid(s))
    return Status::InvalidArgument(ctx + "." + key + ": expected one character");
  char32_t c = NextCodePoint(s, &pos);
  if (pos != s.size()) return Status::InvalidArgument(ctx + "." + key + ": expected one character");
  return c;
}

}  // namespace

std::string Decoder::Decode(std::vector<std::string> tokens) const {
  std::string out;
  for (const std::string& t : DecodeChain(std::move(tokens))) out += t;
  return out;
}

Result<std::unique_ptr<Decoder>> ParseDecoder(const Json& j, const std::string& ctx, int depth) {
  if (depth > kMaxDepth) return Status::InvalidArgument(ctx + ": nesting too deep");
  ASSIGN_OR_RETURN(std::string type, ComponentType(j, ctx));
  using Ptr = std::unique_ptr<Decoder>;
  if (type == "ByteLevel") return Ptr(new ByteLevelDec());
  if (type == "Metaspace") {
    ASSIGN_OR_RETURN(char32_t rep, ReadOneChar(j, "replacement", ctx, "\xE2\x96\x81"));
    std::string scheme = "always";
    RETURN_IF_ERROR(ReadString(j, "prepend_scheme", ctx, &scheme));
    if (Field(j, "prepend_scheme") == nullptr) {
      bool add = true;
      RETURN_IF_ERROR(ReadBool(j, "add_prefix_space", ctx, &add));
      scheme = add ? "always" : "never";
    }
    if (scheme != "always" && scheme != "first" && scheme != "never")
      return Status::InvalidArgument(ctx + ".prepend_scheme: unknown value '" + scheme + "'");
    return Ptr(new MetaspaceDec(utf8::Encode(rep), scheme != "never"));
  }
  if (type == "ByteFallback") return Ptr(new ByteFallbackDec());
  if (type == "Fuse") return Ptr(new FuseDec());
  if (type == "Strip") {
    ASSIGN_OR_RETURN(char32_t content, ReadOneChar(j, "content", ctx, " "));
    int64_t start = 0, stop = 0;
    RETURN_IF_ERROR(ReadInt(j, "start", ctx, &start));
    RETURN_IF_ERROR(ReadInt(j, "stop", ctx, &stop));
    if (start < 0 || stop < 0) return Status::InvalidArgument(ctx + ": negative start/stop");
    return Ptr(new StripDec(content, static_cast<size_t>(start), static_cast<size_t>(stop)));
  }
  if (type == "Replace") {
    ASSIGN_OR_RETURN(PatternSpec spec, ReadPattern(j, ctx));
    ASSIGN_OR_RETURN(Pattern pattern, Pattern::FromSpec(spec));
    std::string content;
    RETURN_IF_ERROR(ReadString(j, "content", ctx, &content, /*required=*/true));
    return Ptr(new ReplaceDec(std::move(pattern), std::move(content)));
  }
  if (type == "WordPiece") {
    std::string prefix = "##";
    bool cleanup = true;
    RETURN_IF_ERROR(ReadString(j, "prefix", ctx, &prefix));
    RETURN_IF_ERROR(ReadBool(j, "cleanup", ctx, &cleanup));
    return Ptr(new WordPieceDec(std::move(prefix), cleanup));
  }
  if (type == "BPEDecoder") {
    std::string suffix = "</w>";
    RETURN_IF_ERROR(ReadString(j, "suffix", ctx, &suffix));
    return Ptr(new BpeDec(std::move(suffix)));
  }
  if (type == "CTC") {
    std::string pad = "<pad>", delim = "|";
    bool cleanup = true;
    RETURN_IF_ERROR(ReadString(j, "pad_token", ctx, &pad));
    RETURN_IF_ERROR(ReadString(j, "word_delimiter_token", ctx, &delim));
    RETURN_IF_ERROR(ReadBool(j, "cleanup", ctx, &cleanup));
    return Ptr(new CtcDec(std::move(pad), std::move(delim), cleanup));
  }
  if (type == "Sequence") {
    const Json* list = Field(j, "decoders");
    if (list == nullptr || !list->is_array())
      return Status::InvalidArgument(ctx + ".decoders: expected an array");
    std::vector<Ptr> items;
    for (size_t i = 0; i < list->size(); ++i) {
      ASSIGN_OR_RETURN(Ptr d, ParseDecoder((*list)[i], ctx + ".decoders[" + std::to_string(i) + "]",
                                           depth + 1));
      items.push_back(std::move(d));
    }
    return Ptr(new SequenceDec(std::move(items)));
  }
  return Status::NotSupported(ctx + ": decoder type '" + type + "' is not supported");
}

}  // namespace llmhost::tok
