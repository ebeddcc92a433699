#include "chat/jinja_lexer.h"

#include <unicode/uchar.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja_unicode.h"
#include "chat/jinja_value.h"

namespace llmhost::jinja {
namespace {

[[noreturn]] void SyntaxError(std::string message, int line) { throw Error("TemplateSyntaxError", std::move(message), line); }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }

// Python whitespace (`\s`) at s[pos]; *len gets its byte length.
bool SpaceAt(std::string_view s, size_t pos, size_t* len) {
  if (pos >= s.size()) return false;
  unsigned char c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) {
    *len = 1;
    return IsPySpace(c);
  }
  size_t p = pos;
  char32_t cp = DecodeCodePoint(s, &p);
  *len = p - pos;
  return IsPySpace(cp);
}

size_t SkipSpace(std::string_view s, size_t pos) {
  size_t len;
  while (SpaceAt(s, pos, &len)) pos += len;
  return pos;
}

// Python str.rstrip() (whitespace).
std::string_view RStripSpace(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    // Step back one code point.
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 && end - start < 4) --start;
    size_t p = start;
    char32_t cp = DecodeCodePoint(s, &p);
    if (p != end) {  // invalid sequence: treat the last byte alone
      start = end - 1;
      p = start;
      cp = DecodeCodePoint(s, &p);
    }
    if (!IsPySpace(cp)) break;
    end = start;
  }
  return s.substr(0, end);
}

bool AllSpace(std::string_view s) {
  if (s.empty()) return false;
  size_t pos = 0, len;
  while (pos < s.size()) {
    if (!SpaceAt(s, pos, &len)) return false;
    pos += len;
  }
  return true;
}

int CountNewlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += (c == '\n');
  return n;
}

bool StartsWith(std::string_view s, size_t pos, std::string_view what) {
  return s.size() >= pos + what.size() && s.compare(pos, what.size(), what) == 0;
}

// Python's "unicode-escape" decoding of a string literal after non-ASCII
// characters were replaced by \x/\u/\U escapes, as Jinja does.
std::string DecodeStringLiteral(std::string_view raw, int line) {
  std::string ascii;
  ascii.reserve(raw.size());
  size_t pos = 0;
  while (pos < raw.size()) {
    unsigned char c = static_cast<unsigned char>(raw[pos]);
    if (c < 0x80) {
      ascii.push_back(static_cast<char>(c));
      ++pos;
      continue;
    }
    char32_t cp = DecodeCodePoint(raw, &pos);
    char buf[16];
    if (cp < 0x100) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
    } else {
      std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(cp));
    }
    ascii += buf;
  }
  std::string out;
  out.reserve(ascii.size());
  size_t i = 0;
  auto hex_escape = [&](size_t digits, const char* what) -> char32_t {
    if (i + digits > ascii.size()) SyntaxError(std::string("truncated ") + what + " escape", line);
    char32_t v = 0;
    for (size_t k = 0; k < digits; ++k) {
      char h = ascii[i + k];
      if (!IsHex(h)) SyntaxError(std::string("truncated ") + what + " escape", line);
      v = v * 16 + static_cast<char32_t>(IsDigit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    i += digits;
    return v;
  };
  while (i < ascii.size()) {
    char c = ascii[i++];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (i >= ascii.size()) SyntaxError("\\ at end of string", line);
    char e = ascii[i++];
    switch (e) {
      case '\n': break;
      case '\\': out.push_back('\\'); break;
      case '\'': out.push_back('\''); break;
      case '"': out.push_back('"'); break;
      case 'a': out.push_back('\a'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'v': out.push_back('\v'); break;
      case 'x': AppendCodePoint(&out, hex_escape(2, "\\xXX")); break;
      case 'u': AppendCodePoint(&out, hex_escape(4, "\\uXXXX")); break;
      case 'U': {
        char32_t v = hex_escape(8, "\\UXXXXXXXX");
        if (v > 0x10FFFF) SyntaxError("illegal Unicode character", line);
        AppendCodePoint(&out, v);
        break;
      }
      case 'N': {
        size_t close = ascii.find('}', i);
        if (i >= ascii.size() || ascii[i] != '{' || close == std::string::npos || close == i + 1) {
          SyntaxError("malformed \\N character escape", line);
        }
        std::string name = ascii.substr(i + 1, close - i - 1);
        UErrorCode err = U_ZERO_ERROR;
        UChar32 cp = u_charFromName(U_UNICODE_CHAR_NAME, name.c_str(), &err);
        if (U_FAILURE(err)) {
          err = U_ZERO_ERROR;
          cp = u_charFromName(U_CHAR_NAME_ALIAS, name.c_str(), &err);
        }
        if (U_FAILURE(err)) SyntaxError("unknown Unicode character name", line);
        AppendCodePoint(&out, static_cast<char32_t>(cp));
        i = close + 1;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          char32_t v = static_cast<char32_t>(e - '0');
          for (int k = 0; k < 2 && i < ascii.size() && ascii[i] >= '0' && ascii[i] <= '7'; ++k) {
            v = v * 8 + static_cast<char32_t>(ascii[i++] - '0');
          }
          AppendCodePoint(&out, v);
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

// Digits with single underscores between them: (\d+_)*\d+. Returns the end or
// `pos` when nothing matches.
size_t MatchDigits(std::string_view s, size_t pos) {
  size_t p = pos;
  if (p >= s.size() || !IsDigit(s[p])) return pos;
  while (true) {
    while (p < s.size() && IsDigit(s[p])) ++p;
    if (p + 1 < s.size() && s[p] == '_' && IsDigit(s[p + 1])) {
      ++p;
      continue;
    }
    return p;
  }
}

// Jinja's float_re at pos; returns the end or pos.
size_t MatchFloat(std::string_view s, size_t pos) {
  if (pos > 0 && s[pos - 1] == '.') return pos;
  size_t p = MatchDigits(s, pos);
  if (p == pos) return pos;
  auto match_exp = [&](size_t q) -> size_t {
    if (q >= s.size() || (s[q] | 0x20) != 'e') return 0;
    ++q;
    if (q < s.size() && (s[q] == '+' || s[q] == '-')) ++q;
    size_t r = MatchDigits(s, q);
    return r == q ? 0 : r;
  };
  size_t frac_end = 0;
  if (p < s.size() && s[p] == '.') {
    size_t q = MatchDigits(s, p + 1);
    if (q != p + 1) frac_end = q;
  }
  if (frac_end) {
    if (size_t e = match_exp(frac_end)) return e;
  }
  if (size_t e = match_exp(p)) return e;
  return frac_end ? frac_end : pos;
}

// Jinja's integer_re at pos; returns the end or pos, with the value.
size_t MatchInt(std::string_view s, size_t pos, int64_t* value, int line) {
  if (pos >= s.size() || !IsDigit(s[pos])) return pos;
  int base = 10;
  size_t p = pos;
  std::string digits;
  if (s[pos] == '0' && pos + 1 < s.size() && ((s[pos + 1] | 0x20) == 'b' || (s[pos + 1] | 0x20) == 'o' ||
                                                (s[pos + 1] | 0x20) == 'x')) {
    char kind = static_cast<char>(s[pos + 1] | 0x20);
    base = kind == 'b' ? 2 : kind == 'o' ? 8 : 16;
    auto ok = [&](char c) {
      if (base == 2) return c == '0' || c == '1';
      if (base == 8) return c >= '0' && c <= '7';
      return IsHex(c);
    };
    size_t q = pos + 2;
    while (true) {
      size_t r = q;
      if (r < s.size() && s[r] == '_') ++r;
      if (r < s.size() && ok(s[r])) {
        digits.push_back(s[r]);
        q = r + 1;
      } else {
        break;
      }
    }
    if (!digits.empty()) {
      p = q;
    } else {
      base = 10;  // "0x" alone: just the "0"
    }
  }
  if (base == 10) {
    digits.clear();
    if (s[pos] == '0') {  // 0(_?0)*
      p = pos + 1;
      while (true) {
        size_t r = p;
        if (r < s.size() && s[r] == '_') ++r;
        if (r < s.size() && s[r] == '0') {
          p = r + 1;
        } else {
          break;
        }
      }
      digits = "0";
    } else {  // [1-9](_?\d)*
      p = pos;
      digits.push_back(s[p++]);
      while (true) {
        size_t r = p;
        if (r < s.size() && s[r] == '_') ++r;
        if (r < s.size() && IsDigit(s[r])) {
          digits.push_back(s[r]);
          p = r + 1;
        } else {
          break;
        }
      }
    }
  }
  errno = 0;
  unsigned long long v = std::strtoull(digits.c_str(), nullptr, base);
  if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) {
    throw Error("OverflowError", "integer literal too large", line);
  }
  *value = static_cast<int64_t>(v);
  return p;
}

bool NameStart(char32_t cp) {
  if (cp < 0x80) return cp == '_' || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_XID_START);
}
bool NameContinue(char32_t cp) {
  if (cp < 0x80) return cp == '_' || IsDigit(static_cast<char>(cp)) || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_XID_CONTINUE);
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_.push_back('\n');
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_.push_back(source[i]);
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> Run() {
    while (pos_ < src_.size()) {
      size_t tag = FindTagStart(pos_);
      if (tag == std::string::npos) {
        Emit(TokType::kData, src_.substr(pos_));
        pos_ = src_.size();
        break;
      }
      std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
      char kind = src_[tag + 1];  // '{', '%' or '#'
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (sign != '-' && sign != '+') sign = '\0';
      size_t raw_end = kind == '%' ? MatchRawBegin(tag) : 0;
      // Whitespace control of the text before the tag.
      std::string_view kept = text;
      if (sign == '-') {
        kept = RStripSpace(text);
      } else if (sign != '+' && kind != '{') {  // lstrip_blocks
        size_t nl = text.rfind('\n');
        size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting_) && AllSpace(text.substr(l_pos))) kept = text.substr(0, l_pos);
      }
      if (!kept.empty()) Emit(TokType::kData, std::string(kept));
      line_ += CountNewlines(text);
      if (raw_end) {
        line_ += CountNewlines(std::string_view(src_).substr(tag, raw_end - tag));
        line_starting_ = src_[raw_end - 1] == '\n';
        pos_ = raw_end;
        LexRaw();
      } else if (kind == '#') {
        LexComment(tag + 2 + (sign ? 1 : 0));
      } else {
        Emit(kind == '%' ? TokType::kBlockBegin : TokType::kVarBegin, "");
        pos_ = tag + 2 + (sign ? 1 : 0);
        LexTag(kind == '%');
      }
    }
    Emit(TokType::kEof, "");
    return std::move(tokens_);
  }

 private:
  void Emit(TokType type, std::string value) {
    Token t;
    t.type = type;
    t.line = line_;
    t.value = std::move(value);
    tokens_.push_back(std::move(t));
  }

  size_t FindTagStart(size_t from) const {
    while (true) {
      size_t p = src_.find('{', from);
      if (p == std::string::npos || p + 1 >= src_.size()) return std::string::npos;
      char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      from = p + 1;
    }
  }

  // `{%[-+]?\s*raw\s*(-%}\s*|%})` at tag; returns its end or 0.
  size_t MatchRawBegin(size_t tag) const {
    size_t p = tag + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p = SkipSpace(src_, p);
    if (!StartsWith(src_, p, "raw")) return 0;
    p = SkipSpace(src_, p + 3);
    if (StartsWith(src_, p, "-%}")) return SkipSpace(src_, p + 3);
    if (StartsWith(src_, p, "%}")) return p + 2;
    return 0;
  }

  // Block end at p: `+%}`, `-%}\s*` or `%}\n?`. Returns its end or 0.
  size_t MatchBlockEnd(size_t p) const {
    if (StartsWith(src_, p, "+%}")) return p + 3;
    if (StartsWith(src_, p, "-%}")) return SkipSpace(src_, p + 3);
    if (StartsWith(src_, p, "%}")) return p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n' ? 1 : 0);
    return 0;
  }

  void LexComment(size_t from) {
    for (size_t p = from; p < src_.size(); ++p) {
      size_t end = 0;
      if (StartsWith(src_, p, "+#}")) {
        end = p + 3;
      } else if (StartsWith(src_, p, "-#}")) {
        end = SkipSpace(src_, p + 3);
      } else if (StartsWith(src_, p, "#}")) {
        end = p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n' ? 1 : 0);
      }
      if (end) {
        line_ += CountNewlines(std::string_view(src_).substr(pos_, end - pos_));
        line_starting_ = src_[end - 1] == '\n';
        pos_ = end;
        return;
      }
    }
    SyntaxError("Missing end of comment tag", line_);
  }

  void LexRaw() {
    for (size_t p = src_.find("{%", pos_); p != std::string::npos; p = src_.find("{%", p + 1)) {
      size_t q = p + 2;
      char sign = '\0';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = SkipSpace(src_, q);
      if (!StartsWith(src_, q, "endraw")) continue;
      size_t end = MatchBlockEnd(SkipSpace(src_, q + 6));
      if (!end) continue;
      std::string_view text = std::string_view(src_).substr(pos_, p - pos_);
      std::string_view kept = text;
      if (sign == '-') {
        kept = RStripSpace(text);
      } else if (sign != '+') {
        size_t nl = text.rfind('\n');
        size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting_) && AllSpace(text.substr(l_pos))) kept = text.substr(0, l_pos);
      }
      if (!kept.empty()) Emit(TokType::kData, std::string(kept));
      line_ += CountNewlines(std::string_view(src_).substr(pos_, end - pos_));
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return;
    }
    SyntaxError("Missing end of raw directive", line_);
  }

  void LexTag(bool block) {
    std::vector<char> balance;
    while (pos_ < src_.size()) {
      if (balance.empty()) {
        size_t end = 0;
        if (block) {
          end = MatchBlockEnd(pos_);
        } else if (StartsWith(src_, pos_, "-}}")) {
          end = SkipSpace(src_, pos_ + 3);
        } else if (StartsWith(src_, pos_, "}}")) {
          end = pos_ + 2;
        }
        if (end) {
          Emit(block ? TokType::kBlockEnd : TokType::kVarEnd, "");
          line_ += CountNewlines(std::string_view(src_).substr(pos_, end - pos_));
          line_starting_ = src_[end - 1] == '\n';
          pos_ = end;
          return;
        }
      }
      size_t len;
      if (SpaceAt(src_, pos_, &len)) {
        size_t end = SkipSpace(src_, pos_);
        line_ += CountNewlines(std::string_view(src_).substr(pos_, end - pos_));
        pos_ = end;
        continue;
      }
      char c = src_[pos_];
      if (IsDigit(c)) {
        size_t end = MatchFloat(src_, pos_);
        if (end != pos_) {
          std::string text;
          for (size_t k = pos_; k < end; ++k) {
            if (src_[k] != '_') text.push_back(src_[k]);
          }
          Emit(TokType::kFloat, text);
          tokens_.back().fval = std::strtod(text.c_str(), nullptr);
          pos_ = end;
          continue;
        }
        int64_t v = 0;
        end = MatchInt(src_, pos_, &v, line_);
        Emit(TokType::kInt, src_.substr(pos_, end - pos_));
        tokens_.back().ival = v;
        pos_ = end;
        continue;
      }
      if (c == '\'' || c == '"') {
        size_t p = pos_ + 1;
        while (p < src_.size() && src_[p] != c) p += (src_[p] == '\\') ? 2 : 1;
        if (p < src_.size()) {
          int start_line = line_;
          std::string raw = src_.substr(pos_ + 1, p - pos_ - 1);
          Emit(TokType::kString, DecodeStringLiteral(raw, start_line));
          line_ += CountNewlines(raw);
          pos_ = p + 1;
          continue;
        }
        SyntaxError(std::string("unexpected char '") + c + "' at " + std::to_string(pos_), line_);
      }
      {
        size_t p = pos_;
        char32_t cp = DecodeCodePoint(src_, &p);
        if (NameStart(cp)) {
          size_t end = p;
          while (end < src_.size()) {
            size_t q = end;
            if (!NameContinue(DecodeCodePoint(src_, &q))) break;
            end = q;
          }
          Emit(TokType::kName, src_.substr(pos_, end - pos_));
          pos_ = end;
          continue;
        }
      }
      static const char* kOps2[] = {"//", "**", "==", "!=", ">=", "<="};
      bool matched = false;
      for (const char* op : kOps2) {
        if (StartsWith(src_, pos_, op)) {
          Emit(TokType::kOp, op);
          pos_ += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      static const std::string_view kOps1 = "+-/*%~[](){}><=.:|,;";
      if (kOps1.find(c) == std::string_view::npos) {
        SyntaxError(std::string("unexpected char '") + c + "' at " + std::to_string(pos_), line_);
      }
      if (c == '{' || c == '(' || c == '[') {
        balance.push_back(c == '{' ? '}' : c == '(' ? ')' : ']');
      } else if (c == '}' || c == ')' || c == ']') {
        if (balance.empty()) SyntaxError(std::string("unexpected '") + c + "'", line_);
        if (balance.back() != c) {
          SyntaxError(std::string("unexpected '") + c + "', expected '" + balance.back() + "'", line_);
        }
        balance.pop_back();
      }
      Emit(TokType::kOp, std::string(1, c));
      ++pos_;
    }
    // End of source inside a tag: the parser reports the missing end.
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source) { return Lexer(source).Run(); }

}  // namespace llmhost::jinja
