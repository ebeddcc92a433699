// Python builtins the filters share: len(), str.splitlines(), int(str, base)
// and float(str).
#include <cmath>
#include <cstdlib>

#include "chat/jinja_builtins_impl.h"
#include "chat/jinja_unicode.h"

namespace llmhost::jinja {

int64_t PyLen(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return 0;
    case Kind::kString: return static_cast<int64_t>(CodePointLen(v.s()));
    case Kind::kSeq:
      if (v.seq().kind == SeqKind::kGenerator) break;
      return static_cast<int64_t>(v.seq().items.size());
    case Kind::kDict: return static_cast<int64_t>(v.dict().size());
    case Kind::kObject:
      if (v.obj().Length() >= 0) return v.obj().Length();
      break;
    default: break;
  }
  ThrowTypeError("object of type '" + v.TypeName() + "' has no len()");
}

std::vector<std::string> SplitLines(std::string_view s, bool keepends) {
  std::vector<std::string> lines;
  size_t start = 0, pos = 0;
  while (pos < s.size()) {
    size_t cp_start = pos;
    char32_t cp = DecodeCodePoint(s, &pos);
    bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
               cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!brk) continue;
    size_t end = pos;
    if (cp == '\r' && pos < s.size() && s[pos] == '\n') end = ++pos;
    lines.emplace_back(s.substr(start, (keepends ? end : cp_start) - start));
    start = end;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

bool ParsePyInt(std::string_view text, int base, int64_t* out) {
  std::string s = PyStrip(text, nullptr, true, true);
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  auto prefix_base = [&](size_t at) -> int {
    if (at + 1 >= s.size() || s[at] != '0') return 0;
    char p = static_cast<char>(s[at + 1] | 0x20);
    return p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
  };
  if (base == 0) {
    int pb = prefix_base(i);
    if (pb) {
      base = pb;
      i += 2;
      if (i < s.size() && s[i] == '_') ++i;
    } else {
      base = 10;
      // Base 0 forbids leading zeros in non-zero decimals.
      if (i + 1 < s.size() && s[i] == '0') {
        for (size_t k = i; k < s.size(); ++k) {
          if (s[k] != '0' && s[k] != '_') return false;
        }
      }
    }
  } else if (base == 16 || base == 8 || base == 2) {
    if (prefix_base(i) == base) {
      i += 2;
      if (i < s.size() && s[i] == '_') ++i;
    }
  } else if (base < 2 || base > 36) {
    Throw("ValueError", "int() base must be >= 2 and <= 36, or 0");
  }
  if (i >= s.size()) return false;
  unsigned __int128 v = 0;
  bool last_underscore = true;  // no leading underscore
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      if (last_underscore) return false;
      last_underscore = true;
      continue;
    }
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') d = (c | 0x20) - 'a' + 10;
    else return false;
    if (d >= base) return false;
    v = v * base + d;
    if (v > static_cast<unsigned __int128>(INT64_MAX) + 1) Throw("OverflowError", "integer overflow");
    last_underscore = false;
  }
  if (last_underscore) return false;
  if (!neg && v > static_cast<unsigned __int128>(INT64_MAX)) Throw("OverflowError", "integer overflow");
  *out = neg ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : static_cast<int64_t>(v);
  return true;
}

bool ParsePyFloat(std::string_view text, double* out) {
  std::string s = PyStrip(text, nullptr, true, true);
  std::string t;  // without underscores (only allowed between digits)
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      bool ok = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return false;
      continue;
    }
    t.push_back(s[i]);
  }
  size_t i = 0;
  std::string body = t;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  std::string rest;
  for (size_t k = i; k < t.size(); ++k) rest.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(t[k]))));
  if (rest == "inf" || rest == "infinity" || rest == "nan") {
    double v = rest == "nan" ? NAN : INFINITY;
    *out = (t[0] == '-') ? -v : v;
    return true;
  }
  // digits [. digits] | . digits, then optional exponent.
  size_t k = i, digits = 0;
  while (k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) ++k, ++digits;
  if (k < t.size() && t[k] == '.') {
    ++k;
    while (k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) ++k, ++digits;
  }
  if (digits == 0) return false;
  if (k < t.size() && (t[k] | 0x20) == 'e') {
    ++k;
    if (k < t.size() && (t[k] == '+' || t[k] == '-')) ++k;
    size_t e = k;
    while (k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) ++k;
    if (k == e) return false;
  }
  if (k != t.size()) return false;
  *out = std::strtod(t.c_str(), nullptr);
  return true;
}

}  // namespace llmhost::jinja
