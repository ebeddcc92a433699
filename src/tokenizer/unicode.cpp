#include "tokenizer/unicode.h"

#include <unicode/uchar.h>
#include <unicode/uset.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

#include "util/utf8.h"

namespace llmhost::tok {

std::string SanitizeUtf8(std::string_view s) {
  if (utf8::IsValid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  size_t pos = 0;
  while (pos < s.size()) utf8::Append(&out, utf8::DecodeOne(s, &pos));
  return out;
}

char32_t NextCodePoint(std::string_view s, size_t* pos) {
  uint8_t b = static_cast<uint8_t>(s[*pos]);
  if (b < 0x80) {
    ++*pos;
    return b;
  }
  return utf8::DecodeOne(s, pos);
}

bool IsWhitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool IsAlphabetic(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC);
}

static uint32_t CategoryMask(char32_t c) { return U_MASK(u_charType(static_cast<UChar32>(c))); }

// True when c was assigned in Unicode <= major.minor. HF's category helpers
// come from crates with old tables: unicode_categories (Unicode 8.0: BERT's
// punctuation, control and accent tests) and unicode-normalization-alignments
// (Unicode 9.0: NFC/NFD/NFKC/NFKD, StripAccents). Newer characters are
// "unknown" there (checked against HF tokenizers 0.23.2).
static bool AssignedBy(char32_t c, int major) {
  UVersionInfo v;
  u_charAge(static_cast<UChar32>(c), v);
  return v[0] != 0 && v[0] <= major;
}

bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return (CategoryMask(c) & U_GC_N_MASK) != 0;
}

bool IsAlphanumeric(char32_t c) { return IsAlphabetic(c) || IsNumeric(c); }

bool IsPunctuation(char32_t c) {
  return (CategoryMask(c) & U_GC_P_MASK) != 0 && (c < 0x80 || AssignedBy(c, 8));
}

bool IsOther(char32_t c) {
  // Cc Cf Co Cs; unassigned code points (Cn) are kept, as HF's BERT
  // normalizer keeps them (checked against HF tokenizers).
  return (CategoryMask(c) & (U_GC_CC_MASK | U_GC_CF_MASK | U_GC_CO_MASK | U_GC_CS_MASK)) != 0 &&
         (c < 0x80 || AssignedBy(c, 8));
}

bool IsMarkNonspacing(char32_t c) {
  return (CategoryMask(c) & U_GC_MN_MASK) != 0 && AssignedBy(c, 8);
}

bool IsMark(char32_t c) { return (CategoryMask(c) & U_GC_M_MASK) != 0 && AssignedBy(c, 9); }

bool IsCjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void AppendLowercase(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    return;
  }
  // Full mapping of the character on its own (no final-sigma context), as
  // Rust's char::to_lowercase.
  UChar src[2];
  int32_t src_len = 0;
  U16_APPEND_UNSAFE(src, src_len, static_cast<UChar32>(c));
  UChar dst[8];
  UErrorCode err = U_ZERO_ERROR;
  int32_t n = u_strToLower(dst, 8, src, src_len, "", &err);
  if (U_FAILURE(err) || n > 8) {
    utf8::Append(out, c);
    return;
  }
  for (int32_t i = 0; i < n;) {
    UChar32 cp;
    U16_NEXT(dst, i, n, cp);
    utf8::Append(out, static_cast<char32_t>(cp));
  }
}

std::string Lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) AppendLowercase(NextCodePoint(s, &pos), &out);
  return out;
}

static bool IsAscii(std::string_view s) {
  for (char ch : s)
    if (static_cast<uint8_t>(ch) >= 0x80) return false;
  return true;
}

// The normalizer for `form` restricted to Unicode 9.0 characters (newer ones
// pass through unchanged, as in HF's tables). Built once; ICU normalizers are
// safe to share between threads.
static const UNormalizer2* Unicode9Normalizer(NormalForm form) {
  struct Filtered {
    USet* set = nullptr;
    UNormalizer2* norms[4] = {};
    Filtered() {
      UErrorCode err = U_ZERO_ERROR;
      static const UChar kPattern[] = u"[:age=9.0:]";
      set = uset_openPattern(kPattern, -1, &err);
      if (U_FAILURE(err)) return;
      uset_freeze(set);
      const UNormalizer2* base[4] = {unorm2_getNFCInstance(&err), unorm2_getNFDInstance(&err),
                                     unorm2_getNFKCInstance(&err), unorm2_getNFKDInstance(&err)};
      if (U_FAILURE(err)) return;
      for (int i = 0; i < 4; ++i) {
        norms[i] = unorm2_openFiltered(base[i], set, &err);
        if (U_FAILURE(err)) norms[i] = nullptr;
      }
    }
  };
  static const Filtered filtered;
  return filtered.norms[static_cast<int>(form)];
}

std::string NormalizeForm(std::string_view s, NormalForm form) {
  if (IsAscii(s)) return std::string(s);  // ASCII is invariant in all forms
  if (s.size() > (1u << 28)) return std::string(s);  // ICU lengths are int32
  const UNormalizer2* norm = Unicode9Normalizer(form);
  if (norm == nullptr) return std::string(s);
  UErrorCode err = U_ZERO_ERROR;
  // UTF-8 -> UTF-16 -> normalize -> UTF-8.
  std::vector<UChar> src(s.size() + 1);
  int32_t src_len = 0;
  u_strFromUTF8(src.data(), static_cast<int32_t>(src.size()), &src_len, s.data(),
                static_cast<int32_t>(s.size()), &err);
  if (U_FAILURE(err)) return std::string(s);
  // Decomposition can grow text; retry once with the size ICU asks for.
  std::vector<UChar> dst(static_cast<size_t>(src_len) * 3 + 16);
  int32_t n = unorm2_normalize(norm, src.data(), src_len, dst.data(),
                               static_cast<int32_t>(dst.size()), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    err = U_ZERO_ERROR;
    dst.resize(static_cast<size_t>(n) + 1);
    n = unorm2_normalize(norm, src.data(), src_len, dst.data(), static_cast<int32_t>(dst.size()),
                         &err);
  }
  if (U_FAILURE(err)) return std::string(s);
  std::string out(static_cast<size_t>(n) * 3 + 4, '\0');
  int32_t out_len = 0;
  u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &out_len, dst.data(), n, &err);
  if (U_FAILURE(err)) return std::string(s);
  out.resize(static_cast<size_t>(out_len));
  return out;
}

}  // namespace llmhost::tok
