#include "chat/jinja_unicode.h"

#include <unicode/uchar.h>
#include <unicode/ustring.h>

#include <vector>

#include "util/utf8.h"

namespace llmhost::jinja {

char32_t DecodeCodePoint(std::string_view s, size_t* pos) { return utf8::DecodeOne(s, pos); }
void AppendCodePoint(std::string* out, char32_t cp) { utf8::Append(out, cp); }

bool IsAsciiStr(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

size_t CodePointLen(std::string_view s) {
  if (IsAsciiStr(s)) return s.size();
  size_t n = 0, pos = 0;
  while (pos < s.size()) {
    DecodeCodePoint(s, &pos);
    ++n;
  }
  return n;
}

size_t ByteOffsetOf(std::string_view s, size_t index) {
  size_t pos = 0;
  for (size_t k = 0; k < index && pos < s.size(); ++k) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
    } else {
      DecodeCodePoint(s, &pos);
    }
  }
  return pos;
}

bool IsPySpace(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D:
    case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x20:
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool IsPrintable(char32_t cp) {
  if (cp == ' ') return true;
  if (cp < 0x20 || cp == 0x7f) return false;
  if (cp < 0x7f) return true;
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
    case U_SPACE_SEPARATOR:
      return false;
    default:
      return true;
  }
}

bool IsAlphaCp(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
      return true;
    default:
      return false;
  }
}

static int NumericType(char32_t cp) { return u_getIntPropertyValue(static_cast<UChar32>(cp), UCHAR_NUMERIC_TYPE); }

bool IsDecimalCp(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return NumericType(cp) == U_NT_DECIMAL;
}
bool IsDigitCp(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  int t = NumericType(cp);
  return t == U_NT_DECIMAL || t == U_NT_DIGIT;
}
bool IsNumericCp(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  int t = NumericType(cp);
  return t == U_NT_DECIMAL || t == U_NT_DIGIT || t == U_NT_NUMERIC;
}
bool IsAlnumCp(char32_t cp) { return IsAlphaCp(cp) || IsNumericCp(cp); }
bool IsCasedCp(char32_t cp) {
  if (cp < 0x80) return IsAlphaCp(cp);
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_CASED);
}
bool IsLowerCp(char32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_LOWERCASE);
}
bool IsUpperCp(char32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_UPPERCASE);
}
bool IsTitleCp(char32_t cp) { return cp >= 0x80 && u_charType(static_cast<UChar32>(cp)) == U_TITLECASE_LETTER; }
bool IsWordCp(char32_t cp) { return cp == '_' || IsAlnumCp(cp); }

namespace {

enum class CaseOp { kUpper, kLower, kTitle, kFold };

// Full case mapping of one non-ASCII code point through ICU (UTF-16 in/out).
void AppendMapped(char32_t cp, CaseOp op, std::string* out) {
  UChar src[2];
  int32_t src_len = 0;
  UBool err_flag = false;
  U16_APPEND(src, src_len, 2, static_cast<UChar32>(cp), err_flag);
  if (err_flag) {
    AppendCodePoint(out, cp);
    return;
  }
  UChar dst[16];
  UErrorCode err = U_ZERO_ERROR;
  int32_t n = 0;
  switch (op) {
    case CaseOp::kUpper: n = u_strToUpper(dst, 16, src, src_len, "", &err); break;
    case CaseOp::kLower: n = u_strToLower(dst, 16, src, src_len, "", &err); break;
    case CaseOp::kTitle: n = u_strToTitle(dst, 16, src, src_len, nullptr, "", &err); break;
    case CaseOp::kFold: n = u_strFoldCase(dst, 16, src, src_len, U_FOLD_CASE_DEFAULT, &err); break;
  }
  if (U_FAILURE(err) || n > 16) {
    AppendCodePoint(out, cp);
    return;
  }
  for (int32_t i = 0; i < n;) {
    UChar32 c;
    U16_NEXT(dst, i, n, c);
    AppendCodePoint(out, static_cast<char32_t>(c));
  }
}

bool IsCaseIgnorable(char32_t cp) {
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_CASE_IGNORABLE);
}

// Python's rule for U+03A3 when lowering: final sigma when preceded by a cased
// letter and not followed by one (case-ignorable characters skipped).
bool IsFinalSigma(const std::u32string& cps, size_t i) {
  size_t j = i;
  bool before = false;
  while (j > 0) {
    --j;
    if (IsCaseIgnorable(cps[j])) continue;
    before = IsCasedCp(cps[j]);
    break;
  }
  if (!before) return false;
  for (size_t k = i + 1; k < cps.size(); ++k) {
    if (IsCaseIgnorable(cps[k])) continue;
    return !IsCasedCp(cps[k]);
  }
  return true;
}

void AppendLower(const std::u32string& cps, size_t i, std::string* out) {
  char32_t cp = cps[i];
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
  } else if (cp == 0x3A3) {
    AppendCodePoint(out, IsFinalSigma(cps, i) ? 0x3C2 : 0x3C3);
  } else {
    AppendMapped(cp, CaseOp::kLower, out);
  }
}

void AppendUpper(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp >= 'a' && cp <= 'z' ? cp - 32 : cp));
  } else {
    AppendMapped(cp, CaseOp::kUpper, out);
  }
}

void AppendTitle(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp >= 'a' && cp <= 'z' ? cp - 32 : cp));
  } else {
    AppendMapped(cp, CaseOp::kTitle, out);
  }
}

}  // namespace

std::string PyUpper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  if (IsAsciiStr(s)) {
    for (char c : s) out.push_back(c >= 'a' && c <= 'z' ? c - 32 : c);
    return out;
  }
  size_t pos = 0;
  while (pos < s.size()) AppendUpper(DecodeCodePoint(s, &pos), &out);
  return out;
}

std::string PyLower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  if (IsAsciiStr(s)) {
    for (char c : s) out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return out;
  }
  std::u32string cps = utf8::Decode(s);
  for (size_t i = 0; i < cps.size(); ++i) AppendLower(cps, i, &out);
  return out;
}

std::string PyCasefold(std::string_view s) {
  if (IsAsciiStr(s)) return PyLower(s);
  std::string out;
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp = DecodeCodePoint(s, &pos);
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
    } else {
      AppendMapped(cp, CaseOp::kFold, &out);
    }
  }
  return out;
}

std::string PyTitle(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::u32string cps = utf8::Decode(s);
  bool prev_cased = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (prev_cased) {
      AppendLower(cps, i, &out);
    } else {
      AppendTitle(cps[i], &out);
    }
    prev_cased = IsCasedCp(cps[i]);
  }
  return out;
}

std::string PyCapitalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::u32string cps = utf8::Decode(s);
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i == 0) {
      AppendTitle(cps[i], &out);
    } else {
      AppendLower(cps, i, &out);
    }
  }
  return out;
}

std::string PySwapcase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::u32string cps = utf8::Decode(s);
  for (size_t i = 0; i < cps.size(); ++i) {
    if (IsUpperCp(cps[i])) {
      AppendLower(cps, i, &out);
    } else if (IsLowerCp(cps[i])) {
      AppendUpper(cps[i], &out);
    } else {
      AppendCodePoint(&out, cps[i]);
    }
  }
  return out;
}

std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  if (IsAsciiStr(s) && (!chars || IsAsciiStr(*chars))) {
    auto strip_me = [&](char c) {
      if (!chars) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
      return chars->find(c) != std::string::npos;
    };
    size_t b = 0, e = s.size();
    if (left) {
      while (b < e && strip_me(s[b])) ++b;
    }
    if (right) {
      while (e > b && strip_me(s[e - 1])) --e;
    }
    return std::string(s.substr(b, e - b));
  }
  std::u32string set;
  if (chars) set = utf8::Decode(*chars);
  auto strip_me = [&](char32_t cp) {
    if (!chars) return IsPySpace(cp);
    return set.find(cp) != std::u32string::npos;
  };
  // Code point boundaries, so that multi-byte characters strip whole.
  std::vector<size_t> starts;
  size_t pos = 0;
  std::u32string cps;
  while (pos < s.size()) {
    starts.push_back(pos);
    cps.push_back(DecodeCodePoint(s, &pos));
  }
  starts.push_back(s.size());
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip_me(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip_me(cps[e - 1])) --e;
  }
  return std::string(s.substr(starts[b], starts[e] - starts[b]));
}

}  // namespace llmhost::jinja
