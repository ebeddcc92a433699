#include "util/utf8.h"

namespace llmhost::utf8 {

size_t SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

char32_t DecodeOne(std::string_view s, size_t* pos) {
  size_t i = *pos;
  uint8_t b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) {
    *pos = i + 1;
    return b0;
  }
  size_t len = SequenceLength(b0);
  if (len == 1 || b0 == 0xC0 || b0 == 0xC1 || b0 > 0xF4 || i + len > s.size()) {
    *pos = i + 1;
    return kReplacement;
  }
  char32_t cp = b0 & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    uint8_t b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      *pos = i + 1;
      return kReplacement;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  // Reject overlong forms, surrogates and out-of-range values.
  static const char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
    *pos = i + 1;
    return kReplacement;
  }
  *pos = i + len;
  return cp;
}

void Append(std::string* out, char32_t cp) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacement;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Encode(char32_t cp) {
  std::string out;
  Append(&out, cp);
  return out;
}

std::u32string Decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) out.push_back(DecodeOne(s, &pos));
  return out;
}

std::string Encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) Append(&out, cp);
  return out;
}

bool IsValid(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t before = pos;
    char32_t cp = DecodeOne(s, &pos);
    if (cp == kReplacement) {
      // A literal U+FFFD is valid (3 bytes); a decode error advances by 1.
      if (pos - before != 3) return false;
    }
  }
  return true;
}

size_t IncompleteTailLength(std::string_view s) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    uint8_t b = static_cast<uint8_t>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    size_t len = SequenceLength(b);
    return len > back ? back : 0;
  }
  return 0;
}

size_t CodePointCount(std::string_view s) {
  size_t pos = 0, n = 0;
  while (pos < s.size()) {
    DecodeOne(s, &pos);
    ++n;
  }
  return n;
}

}  // namespace llmhost::utf8
